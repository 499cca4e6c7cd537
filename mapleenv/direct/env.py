"""``DirectPokemonEnv``: :class:`mapleenv.env.PokemonEnv` on the direct-simulator backend."""

from __future__ import annotations

from typing import Any

from mapleenv.env import PokemonEnv


class DirectPokemonEnv(PokemonEnv):
    """Same arguments, spaces and ``info`` as ``PokemonEnv``; battles run on a Node child
    of the env (``backend="direct"``), so ``server`` (and other websocket arguments) are
    ignored. ``backend_kwargs`` go to :class:`mapleenv.direct.backend.DirectBackend`."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs["backend"] = "direct"
        kwargs.pop("server", None)
        super().__init__(*args, **kwargs)
