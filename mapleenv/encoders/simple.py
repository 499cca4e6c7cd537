"""The simple battle encoder (``encoder="simple"``): 116 hand-made features in gen 9."""

from __future__ import annotations

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


class SimpleEncoder:
    """A small hand-made encoding (116 features in gen 9); the baseline encoder.

    ========================= ===== ==========================================
    block                     size  content
    ========================= ===== ==========================================
    own team                  6x3   HP fraction, is active, fainted (team order)
    opponent team             6x4   HP fraction (1 if unseen), seen, active, fainted
    active types              2x20  multi-hot over ``PokemonType`` (own, opponent)
    moves                     4     base power / 100 x type multiplier vs the
                                    opponent's active, in action slot order
    boosts                    2x7   boost / 6 (own active, opponent active)
    status                    2x7   one-hot over ``Status`` (own, opponent active)
    fainted counts            2     own / 6, opponent / 6
    ========================= ===== ==========================================
    """

    def __init__(self) -> None:
        blocks: list[tuple[int, float, float]] = [
            (TEAM_SIZE * 3, 0.0, 1.0),
            (TEAM_SIZE * 4, 0.0, 1.0),
            (2 * len(TYPES), 0.0, 1.0),
            (NUM_MOVE_SLOTS, 0.0, MAX_MOVE_SCORE),
            (2 * len(BOOSTS), -1.0, 1.0),
            (2 * len(STATUSES), 0.0, 1.0),
            (2, 0.0, 1.0),
        ]
        self.size = sum(n for n, _, _ in blocks)
        self.low = np.concatenate([np.full(n, lo, np.float32) for n, lo, _ in blocks])
        self.high = np.concatenate([np.full(n, hi, np.float32) for n, _, hi in blocks])

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
