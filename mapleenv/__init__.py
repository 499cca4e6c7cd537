"""Maple environment side: Showdown servers, battle env, encoding, reward, opponents.

``import mapleenv`` registers the Gymnasium id ``mapleenv/Showdown-v0``
(:class:`mapleenv.env.PokemonEnv`). Everything else is imported lazily, so importing
the package stays light (no torch, no poke-env until used).
"""

from __future__ import annotations

import importlib
from typing import Any

from gymnasium.envs.registration import register, registry

ENV_ID = "mapleenv/Showdown-v0"

if ENV_ID not in registry:
    register(id=ENV_ID, entry_point="mapleenv.env:PokemonEnv", nondeterministic=True)

_LAZY = {
    "PokemonEnv": "mapleenv.env",
    "BattleAborted": "mapleenv.env",
    "register_backend": "mapleenv.env",
    "make_vector_env": "mapleenv.vector",
    "ShowdownVectorEnv": "mapleenv.vector",
    "ShowdownServer": "mapleenv.server",
    "ServerPool": "mapleenv.server",
    "external_server": "mapleenv.server",
    "find_showdown": "mapleenv.server",
    "ShowdownError": "mapleenv.server",
    "RewardConfig": "mapleenv.reward",
    "make_encoder": "mapleenv.encoding",
    "register_encoder": "mapleenv.encoding",
    "make_opponent": "mapleenv.opponents",
    "register_opponent": "mapleenv.opponents",
}

__all__ = ["ENV_ID", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mapleenv' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
