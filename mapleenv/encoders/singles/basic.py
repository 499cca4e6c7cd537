"""The simple battle encoder (``encoder="singles_basic"``, the singles default): 116 hand-made
features.

:data:`BLOCKS` is the layout: the encoder's size and bounds and the simple encoder's table
in ``docs/observation.md`` are both derived from it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from poke_env.battle.abstract_battle import AbstractBattle
from poke_env.battle.move import Move
from poke_env.battle.pokemon import Pokemon
from poke_env.battle.pokemon_type import PokemonType
from poke_env.battle.status import Status

from mapleenv.actions import NUM_MOVE_SLOTS, move_slots

TYPES = list(PokemonType)
STATUSES = list(Status)
BOOSTS = ("atk", "def", "spa", "spd", "spe", "accuracy", "evasion")
TEAM_SIZE = 6
_TYPE_INDEX = {t: i for i, t in enumerate(TYPES)}
_STATUS_INDEX = {s: i for i, s in enumerate(STATUSES)}
MAX_MOVE_SCORE = 10.0  # base power 250 / 100 x 4 (super effective twice)


@dataclass(frozen=True)
class Block:
    """``size`` consecutive features, each within [``low``, ``high``]."""

    name: str
    size: int
    low: float
    high: float
    content: str


def _names(members: list) -> str:
    return "/".join(m.name.lower() for m in members)


BLOCKS: tuple[Block, ...] = (
    Block(
        "own_team",
        TEAM_SIZE * 3,
        0.0,
        1.0,
        "6 x 3, our Pokémon in `battle.team` order (= switch actions 0-5): HP fraction, "
        "active, fainted",
    ),
    Block(
        "opponent_team",
        TEAM_SIZE * 4,
        0.0,
        1.0,
        "6 x 4, the opponent's Pokémon in reveal order: HP fraction (unseen: 1), seen, "
        "active, fainted",
    ),
    Block(
        "active_types",
        2 * len(TYPES),
        0.0,
        1.0,
        f"2 x {len(TYPES)}, multi-hot types of our active, then the opponent's, order "
        f"{_names(TYPES)}",
    ),
    Block(
        "moves",
        NUM_MOVE_SLOTS,
        0.0,
        MAX_MOVE_SCORE,
        "our active's moves in action-slot order (actions 6-9): base power / 100 x type "
        "multiplier vs the opponent's active, capped at 10; empty slots and status moves 0",
    ),
    Block(
        "boosts",
        2 * len(BOOSTS),
        -1.0,
        1.0,
        f"2 x {len(BOOSTS)}, stage / 6 of our active, then the opponent's, order "
        + "/".join(BOOSTS),
    ),
    Block(
        "status",
        2 * len(STATUSES),
        0.0,
        1.0,
        f"2 x {len(STATUSES)}, one-hot status of our active, then the opponent's, order "
        f"{_names(STATUSES).upper()} (none: all 0)",
    ),
    Block("fainted", 2, 0.0, 1.0, "fainted Pokémon / 6: ours, the opponent's"),
)


class SinglesBasicEncoder:
    """A small hand-made encoding (:data:`BLOCKS`, 116 features); the baseline encoder.

    Absent Pokémon (no active, an empty team slot) leave their features at 0.
    """

    def __init__(self) -> None:
        self.size = sum(b.size for b in BLOCKS)
        self.low = np.concatenate([np.full(b.size, b.low, np.float32) for b in BLOCKS])
        self.high = np.concatenate([np.full(b.size, b.high, np.float32) for b in BLOCKS])

    def encode(self, battle: AbstractBattle) -> np.ndarray:
        out = [0.0] * self.size  # filled as a list: numpy item writes are slower
        i = 0
        own_fainted = 0
        for k, mon in enumerate(list(battle.team.values())[:TEAM_SIZE]):
            j = i + 3 * k
            out[j] = mon.current_hp_fraction
            out[j + 1] = float(bool(mon.active))
            out[j + 2] = float(mon.fainted)
            own_fainted += mon.fainted
        i += 3 * TEAM_SIZE
        out[i : i + 4 * TEAM_SIZE : 4] = [1.0] * TEAM_SIZE  # unseen opponents count as full HP
        opp_fainted = 0
        for k, mon in enumerate(list(battle.opponent_team.values())[:TEAM_SIZE]):
            j = i + 4 * k
            out[j] = mon.current_hp_fraction
            out[j + 1] = 1.0
            out[j + 2] = float(bool(mon.active))
            out[j + 3] = float(mon.fainted)
            opp_fainted += mon.fainted
        i += 4 * TEAM_SIZE
        me = battle.active_pokemon
        them = battle.opponent_active_pokemon
        for mon in (me, them):
            if mon is not None:
                for t in mon.types:
                    out[i + _TYPE_INDEX[t]] = 1.0
            i += len(TYPES)
        for k, move in enumerate(move_slots(battle)):
            multiplier = _multiplier(move, them) if them is not None else 1.0
            out[i + k] = min(move.base_power / 100.0 * multiplier, MAX_MOVE_SCORE)
        i += NUM_MOVE_SLOTS
        for mon in (me, them):
            if mon is not None:
                boosts = mon.boosts
                for k, stat in enumerate(BOOSTS):
                    out[i + k] = boosts.get(stat, 0) / 6.0
            i += len(BOOSTS)
        for mon in (me, them):
            if mon is not None and mon.status is not None:
                out[i + _STATUS_INDEX[mon.status]] = 1.0
            i += len(STATUSES)
        out[i] = own_fainted / TEAM_SIZE
        out[i + 1] = opp_fainted / TEAM_SIZE
        return np.array(out, dtype=np.float32)


_MULTIPLIERS: dict[tuple[str, PokemonType, PokemonType | None, int], float] = {}


def _multiplier(move: Move, target: Pokemon) -> float:
    """``target.damage_multiplier(move)``, memoized (a move's type comes from its entry)."""
    key = (move.id, target.type_1, target.type_2, target.gen)
    value = _MULTIPLIERS.get(key)
    if value is None:
        value = _MULTIPLIERS[key] = target.damage_multiplier(move)
    return value
