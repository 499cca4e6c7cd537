"""Battle encoders: poke-env ``Battle`` -> fixed-size float32 vector.

An encoder has ``size``, ``low``/``high`` bounds (arrays of ``size``) and
``encode(battle)``. Encoders are chosen by name from :data:`ENCODERS`, grouped by game:
``singles/`` (``singles_basic``, ``singles_entities``, ``singles_sets``) and ``doubles/``
(``doubles_basic``, ``doubles_calc``, ``doubles_entities``), with ``features/`` the game data
and calculations they share. Other modules add theirs with :func:`register_encoder`
(:mod:`mapleenv.encoders.builtin`, which loads Showdown's move data, is imported on demand
when a name is unknown), and ``"package.module:factory"`` names a factory directly. The
names before the grouping (:data:`ALIASES`: ``simple``, ``rich``, ``rich2``, ``doubles``,
``doubles2``, ``doubles3``) still name the same encoders, so checkpoints that recorded them
load unchanged.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np
from gymnasium import spaces
from poke_env.battle.abstract_battle import AbstractBattle
from poke_env.player.battle_order import BattleOrder

from mapleenv.actions import legal_actions
from mapleenv.encoders.doubles.basic import DoublesBasicEncoder
from mapleenv.encoders.singles.basic import SinglesBasicEncoder
from mapleenv.showdown.formats import game_type

logger = logging.getLogger(__name__)

# Modules imported (once) when an unknown encoder name is asked for.
PLUGIN_MODULES: tuple[str, ...] = ("mapleenv.encoders.builtin",)

# each encoder's name before the encoders were grouped by game, still accepted (checkpoints
# record the name they trained with): old name -> name
ALIASES: dict[str, str] = {
    "simple": "singles_basic",
    "rich": "singles_entities",
    "rich2": "singles_sets",
    "doubles": "doubles_basic",
    "doubles2": "doubles_calc",
    "doubles3": "doubles_entities",
}


def encoder_name(name: str) -> str:
    """The registered name ``name`` stands for (itself unless it is an old name)."""
    return ALIASES.get(name, name)


@runtime_checkable
class BattleEncoder(Protocol):
    """Turns a battle (seen from one side) into a float32 vector of ``size``."""

    size: int
    low: np.ndarray
    high: np.ndarray

    def encode(self, battle: AbstractBattle) -> np.ndarray: ...


def game_types(encoder: BattleEncoder) -> tuple[str, ...]:
    """The battles an encoder reads (its ``game_types``; ``("singles",)`` when it does not
    say: every encoder before doubles read singles only)."""
    return tuple(getattr(encoder, "game_types", ("singles",)))


def check_game_type(encoder: BattleEncoder, name: str, battle_format: str) -> None:
    """``ValueError`` (one line) when ``encoder`` (called ``name``) cannot read the battles
    of ``battle_format``."""
    game = game_type(battle_format)
    if game in game_types(encoder):
        return
    names = encoders_for(game)
    choices = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else "".join(names)
    raise ValueError(
        f"encoder {name!r} reads {'/'.join(game_types(encoder))} battles and "
        f"{battle_format!r} is a {game} format: use encoder={choices}"
    )


# each game's encoder when none is named (``encoder=None``): the format decides
DEFAULT_ENCODERS = {"singles": "singles_basic", "doubles": "doubles_basic"}


def default_encoder(battle_format: str) -> str:
    """The encoder a format gets when none is named: ``singles_basic`` for singles,
    ``doubles_basic`` for doubles (so a doubles format works with the same command as a
    singles one)."""
    return DEFAULT_ENCODERS[game_type(battle_format)]


def encoders_for(game: str) -> list[str]:
    """The registered encoder names (plugins' included) that read ``game`` battles, as
    their factories declare (``game_types``; a factory that does not say reads singles)."""
    _load_plugins()
    return sorted(
        name
        for name, factory in ENCODERS.items()
        if game in getattr(factory, "game_types", ("singles",))
    )


def observation_box(encoder: BattleEncoder) -> spaces.Box:
    """The Gymnasium ``Box`` of an encoder's vectors."""
    return spaces.Box(
        low=np.asarray(encoder.low, dtype=np.float32),
        high=np.asarray(encoder.high, dtype=np.float32),
        shape=(encoder.size,),
        dtype=np.float32,
    )


EncoderFactory = Callable[[], BattleEncoder]
ENCODERS: dict[str, EncoderFactory] = {
    "singles_basic": SinglesBasicEncoder,
    "doubles_basic": DoublesBasicEncoder,
}
_plugins_loaded = False


def register_encoder(name: str, factory: EncoderFactory) -> None:
    """Make ``factory`` available as ``encoder=name`` (replaces an existing name, an old
    one of :data:`ALIASES` included)."""
    ALIASES.pop(name, None)
    ENCODERS[name] = factory


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for module in PLUGIN_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is None or not module.startswith(exc.name):
                raise
            logger.debug("encoder plugin module %s not available", module)


def make_encoder(encoder: str | BattleEncoder) -> BattleEncoder:
    """An encoder from a registered name, ``"module:factory"``, or an instance."""
    if not isinstance(encoder, str):
        if not isinstance(encoder, BattleEncoder):
            raise TypeError(f"not a BattleEncoder: {encoder!r}")
        return encoder
    encoder = encoder_name(encoder)
    if encoder not in ENCODERS and ":" not in encoder:
        _load_plugins()
    if encoder in ENCODERS:
        return ENCODERS[encoder]()
    if ":" in encoder:
        module, _, attr = encoder.partition(":")
        factory = getattr(importlib.import_module(module), attr)
        return factory()
    raise ValueError(
        f"unknown encoder {encoder!r}; valid: {', '.join(sorted(ENCODERS))} "
        "(or 'package.module:factory')"
    )


def playable_actions(battle: AbstractBattle, mask_futile: bool = False) -> dict[int, BattleOrder]:
    """The legal actions of ``battle``'s decision (:func:`mapleenv.actions.legal_actions`);
    with ``mask_futile``, less the moves that surely fail
    (:func:`mapleenv.encoders.features.certain.without_futile`). One rule for every seat that
    plays a policy: the env, both seats of the multi-agent env, policy opponents and the
    search's opponent model."""
    legal = legal_actions(battle)  # type: ignore[arg-type]
    if not mask_futile or not legal:
        return legal
    from mapleenv.encoders.features.certain import without_futile  # loads the move data

    return without_futile(legal, battle)
