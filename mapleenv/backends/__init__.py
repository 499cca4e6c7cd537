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
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from poke_env.battle.battle import Battle
from poke_env.player.battle_order import BattleOrder


class BattleAborted(RuntimeError):
    """The battle cannot go on (connection lost, server gone, no reply in time)."""


class BattleBackend(Protocol):
    """Source of battles for :class:`PokemonEnv` (see module docs)."""

    def reset(self, seed: int | None = None) -> Battle: ...

    def step(self, order: BattleOrder) -> Battle: ...

    def close(self) -> None: ...


class BackendSpec(Protocol):
    """The env settings a backend reads (a :class:`mapleenv.spec.EnvSpec` has them all)."""

    @property
    def battle_format(self) -> str: ...

    @property
    def log_dir(self) -> str | None: ...

    @property
    def timeout(self) -> float: ...

    @property
    def record_dir(self) -> str | None: ...

    @property
    def backend_kwargs(self) -> Mapping[str, Any]: ...


SpecBackendFactory = Callable[..., BattleBackend]
"""``factory(spec, *, opponent, seed, team, opponent_team) -> BattleBackend``: what
:class:`PokemonEnv` calls. ``spec`` is the env's :class:`BackendSpec` (its
``backend_kwargs`` are the backend's own options); ``opponent`` the built poke-env
``Player``; ``team``/``opponent_team`` the built ``Teambuilder``s (``None``: random
teams); ``seed`` the seed of the first battles. ``backend.reset(seed=s)`` restarts the
backend's battle seeds (a backend that cannot seed its battles, like the websocket one,
ignores it)."""

BackendFactory = Callable[..., BattleBackend]
"""A plugin's factory: ``factory(*, battle_format, opponent, seed, log_dir, team,
**backend_kwargs) -> BattleBackend``; when ``team`` is given, ``opponent_team`` (the
opponent's) is passed too."""

BACKENDS: dict[str, SpecBackendFactory] = {}

# Modules that register a backend, imported on first use of its name (in any process,
# e.g. a spawned vector-env worker).
BACKEND_PLUGINS: dict[str, str] = {"direct": "mapleenv.backends.direct"}


def register_backend(
    name: str, factory: Callable[..., BattleBackend], *, takes_spec: bool = False
) -> None:
    """Make ``PokemonEnv(backend=name)`` (and ``make_vector_env(backend=name)``) use
    ``factory``: a :data:`BackendFactory` (keywords), or with ``takes_spec`` a
    :data:`SpecBackendFactory`. ``"server"`` is built in and cannot be replaced."""
    if name == "server":
        raise ValueError("the 'server' backend is built in")
    BACKENDS[name] = factory if takes_spec else _from_keywords(factory)


def _from_keywords(factory: BackendFactory) -> SpecBackendFactory:
    """A :data:`SpecBackendFactory` calling a keyword :data:`BackendFactory`."""

    def build(
        spec: BackendSpec, *, opponent: Any, seed: int | None, team: Any, opponent_team: Any
    ) -> BattleBackend:
        teams = {"team": team} if team is None else {"team": team, "opponent_team": opponent_team}
        return factory(
            battle_format=spec.battle_format,
            opponent=opponent,
            seed=seed,
            log_dir=spec.log_dir,
            **teams,
            **spec.backend_kwargs,
        )

    return build


def backend_available(name: str) -> bool:
    """Whether ``backend=name`` can be used (importing its plugin module if needed)."""
    if name == "server" or name in BACKENDS:
        return True
    module = BACKEND_PLUGINS.get(name)
    if module is not None:
        importlib.import_module(module)
    return name in BACKENDS


def backend_factory(name: str) -> SpecBackendFactory:
    """The factory of a registered backend (importing its plugin module if needed)."""
    if name == "server" or not backend_available(name):
        raise NotImplementedError(
            f"backend {name!r} is not available as a factory (registered: "
            f"{', '.join(sorted(BACKENDS))}); see register_backend"
        )
    return BACKENDS[name]


def available_backends() -> list[str]:
    """Names usable as ``backend=`` right now (``server`` and the registered ones)."""
    return ["server", *sorted(BACKENDS)]
