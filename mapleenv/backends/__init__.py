"""Battle backends of ``PokemonEnv``: the backend protocol, the registry, ``BattleAborted``.

A backend produces the battles: ``reset() -> Battle`` (the agent's first decision),
``step(order) -> Battle`` (play the agent's order, let the opponent answer its own
requests, return at the agent's next decision or at the end), ``close()``. The built-in
``"server"`` backend is :class:`mapleenv.backends.websocket.ShowdownBackend` (two poke-env
players on a Showdown websocket); ``"direct"`` (:mod:`mapleenv.backends.direct`) runs the
simulator in Node children; others are added with :func:`register_backend` and selected
with ``backend=<name>``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Protocol

from poke_env.battle.battle import Battle
from poke_env.player.battle_order import BattleOrder


class BattleAborted(RuntimeError):
    """The battle cannot go on (connection lost, server gone, no reply in time)."""


class BattleBackend(Protocol):
    """Source of battles for :class:`PokemonEnv` (see module docs)."""

    def reset(self, seed: int | None = None) -> Battle: ...

    def step(self, order: BattleOrder) -> Battle: ...

    def close(self) -> None: ...


BackendFactory = Callable[..., BattleBackend]
"""``factory(*, battle_format, opponent, seed, log_dir, team, **backend_kwargs) -> BattleBackend``;
``backend.reset(seed=s)`` restarts the backend's battle seeds (a backend that cannot
seed its battles, like the websocket one, ignores it). ``team`` is the agent's poke-env
``Teambuilder`` (or ``None``: random teams); when it is given, ``opponent_team`` (the
opponent's) is passed too."""

BACKENDS: dict[str, BackendFactory] = {}

# Modules that register a backend, imported on first use of its name (in any process,
# e.g. a spawned vector-env worker).
BACKEND_PLUGINS: dict[str, str] = {"direct": "mapleenv.backends.direct"}


def register_backend(name: str, factory: BackendFactory) -> None:
    """Make ``PokemonEnv(backend=name)`` (and ``make_vector_env(backend=name)``) use
    ``factory``. ``"server"`` is built in and cannot be replaced."""
    if name == "server":
        raise ValueError("the 'server' backend is built in")
    BACKENDS[name] = factory


def backend_available(name: str) -> bool:
    """Whether ``backend=name`` can be used (importing its plugin module if needed)."""
    if name == "server" or name in BACKENDS:
        return True
    module = BACKEND_PLUGINS.get(name)
    if module is not None:
        importlib.import_module(module)
    return name in BACKENDS


def available_backends() -> list[str]:
    """Names usable as ``backend=`` right now (``server`` and the registered ones)."""
    return ["server", *sorted(BACKENDS)]
