"""Opponents by name: poke-env baselines plus a registry for other kinds.

The opponent is a poke-env ``Player`` that never connects (``start_listening=False``):
the env calls its ``choose_move(battle)`` synchronously on the opponent's own view of
the battle. Names:

* ``random`` (``RandomPlayer``), ``max_power`` (``MaxBasePowerPlayer``),
  ``heuristic`` (``SimpleHeuristicsPlayer``): poke-env's baselines;
* ``calc`` (:class:`~mapleenv.opponents.calc.CalcPlayer`): a 1-ply damage-calculator
  player, held out from the training recipes (for evaluation);
* ``prefix:argument`` for a factory added with :func:`register_opponent`.
  Registration must happen in the process that builds the env: pass the registering
  module in the env's ``plugins`` (imported by the env) when envs run in workers.
  :data:`PLUGIN_MODULES` are imported on demand when an unknown prefix is asked for:
  they register ``policy:<checkpoint>``, ``self`` (:mod:`mapleenv.opponents.policy`) and
  ``mix:<name>=<weight>,...`` (:mod:`mapleenv.opponents.mix`).
"""

from __future__ import annotations

import importlib
import itertools
import logging
import os
import random
import string
from collections.abc import Callable, Mapping
from typing import Any

from poke_env.player import MaxBasePowerPlayer, Player, RandomPlayer, SimpleHeuristicsPlayer
from poke_env.ps_client import AccountConfiguration

from mapleenv.lazy import lazy_getattr
from mapleenv.opponents.calc import CalcPlayer

# Modules imported (once) when an unknown opponent prefix is asked for.
PLUGIN_MODULES: tuple[str, ...] = ("mapleenv.opponents.policy", "mapleenv.opponents.mix")

BASELINES: dict[str, type[Player]] = {
    "random": RandomPlayer,
    "max_power": MaxBasePowerPlayer,
    "heuristic": SimpleHeuristicsPlayer,
    "calc": CalcPlayer,
}

# The rest of the package's face, imported on first use (mix and policy register
# themselves here, so an eager import would be a cycle; policy needs torch).
_LAZY = {
    "OpponentMix": "mapleenv.opponents.mix",
    "mix_members": "mapleenv.opponents.mix",
    "opponent_spec": "mapleenv.opponents.mix",
    "parse_mix": "mapleenv.opponents.mix",
    "uses_self_play": "mapleenv.opponents.mix",
    "FrozenPolicy": "mapleenv.opponents.policy",
    "PolicyOpponent": "mapleenv.opponents.policy",
    "check_policy_files": "mapleenv.opponents.policy",
    "check_policy_game": "mapleenv.opponents.policy",
    "check_search_teacher": "mapleenv.opponents.search_teacher",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


OpponentFactory = Callable[..., Player]
"""``factory(argument: str, *, battle_format: str, seed: int | None, **kwargs) -> Player``."""

_FACTORIES: dict[str, OpponentFactory] = {}
_counter = itertools.count()


def unique_username(role: str) -> str:
    """A Showdown username unique per process and call (<= 18 chars, lowercase)."""
    suffix = "".join(random.choices(string.ascii_lowercase + string.digits, k=3))
    return f"m{os.getpid()}{role}{next(_counter)}{suffix}"[:18]


def register_opponent(prefix: str, factory: OpponentFactory) -> None:
    """Make ``f"{prefix}:<argument>"`` (or bare ``prefix``) build ``factory(argument, ...)``."""
    if prefix in BASELINES or ":" in prefix:
        raise ValueError(f"invalid opponent prefix {prefix!r}")
    _FACTORIES[prefix] = factory


def opponent_names() -> list[str]:
    """Valid names, for messages: the baselines and ``prefix:<...>`` entries."""
    return [*BASELINES, *(f"{p}:<...>" for p in sorted(_FACTORIES))]


def check_opponent_name(name: str) -> None:
    """``ValueError`` (one line) for a name that no baseline and no registered prefix makes
    (the plugin modules that register prefixes are imported first)."""
    prefix, _, argument = name.partition(":")
    if prefix not in BASELINES and prefix not in _FACTORIES:
        for module in PLUGIN_MODULES:
            importlib.import_module(module)
    if not ((prefix in BASELINES and not argument) or prefix in _FACTORIES):
        raise ValueError(f"unknown opponent {name!r}; valid: {', '.join(opponent_names())}")


def make_opponent(
    name: str | Mapping[str, Any],
    battle_format: str = "gen9randombattle",
    *,
    seed: int | None = None,
    **kwargs: Any,
) -> Player:
    """Build the opponent called ``name`` (a mix also as a mapping of weights; extra
    ``kwargs`` go to the Player/factory; ``seed`` goes to registered factories only)."""
    if not isinstance(name, str):
        from mapleenv.opponents.mix import opponent_spec

        name = opponent_spec(name)  # TypeError (one line) for anything else
    check_opponent_name(name)
    prefix, _, argument = name.partition(":")
    if prefix in BASELINES and not argument:
        kwargs.setdefault("account_configuration", AccountConfiguration(unique_username("o"), None))
        kwargs.setdefault("log_level", logging.WARNING)
        return BASELINES[prefix](battle_format=battle_format, start_listening=False, **kwargs)
    return _FACTORIES[prefix](argument, battle_format=battle_format, seed=seed, **kwargs)


def opponent_battles(opponent: Player) -> dict[str, Any]:
    """The battle table of a non-listening opponent (poke-env's private ``Player._battles``):
    its own ``Battle`` must be there before it chooses. The one place Maple reaches into
    poke-env's private state."""
    return opponent._battles
