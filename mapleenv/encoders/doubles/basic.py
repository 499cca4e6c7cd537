"""The doubles battle encoder (``encoder="doubles_basic"``): the simple encoder's hand-made
features for two active Pokémon a side, plus what doubles adds (per move: each foe's
damage multiplier, spread, Protect, Fake Out, redirection, ally support, weather and
terrain setters; who is on a first turn out; the field's Trick Room, Tailwinds, screens,
weather and terrain; which slots must switch).

:data:`BLOCKS` is the layout: the encoder's size and bounds and its table in
``docs/observation.md`` are both derived from it. Active slots are in Showdown's position
order (our ``a``/``b``, the foe's ``a``/``b``); a move slot's columns follow
:func:`mapleenv.actions.doubles.move_slots`, so feature ``(slot, k)`` describes move
sub-actions ``7 + 5k ...`` of that slot.
"""

from __future__ import annotations

import numpy as np
from poke_env.battle.double_battle import DoubleBattle
from poke_env.battle.field import Field
from poke_env.battle.move import Move
from poke_env.battle.move_category import MoveCategory
from poke_env.battle.pokemon import Pokemon
from poke_env.battle.side_condition import SideCondition
from poke_env.battle.target import Target

from mapleenv.actions.doubles import NUM_MOVE_SLOTS, move_slots
from mapleenv.encoders.singles.basic import BLOCKS as SIMPLE_BLOCKS
from mapleenv.encoders.singles.basic import (
    BOOSTS,
    MAX_MOVE_SCORE,
    STATUSES,
    TEAM_SIZE,
    TYPES,
    Block,
    _multiplier,
    _names,
)

_TYPE_INDEX = {t: i for i, t in enumerate(TYPES)}
_STATUS_INDEX = {s: i for i, s in enumerate(STATUSES)}
SLOTS = 4  # our a, our b, the foe's a, the foe's b
MOVES = 2 * NUM_MOVE_SLOTS  # our two actives' move slots
SPREAD_TARGETS = frozenset({Target.ALL_ADJACENT, Target.ALL_ADJACENT_FOES, Target.ALL})
_SCREENS = (SideCondition.REFLECT, SideCondition.LIGHT_SCREEN, SideCondition.AURORA_VEIL)
_SLOTS_TEXT = "our a, our b, the foe's a, the foe's b"
ALLY_TARGETS = frozenset(
    {Target.ADJACENT_ALLY, Target.ADJACENT_ALLY_OR_SELF, Target.ALLIES, Target.ALLY_SIDE}
)
FIRST_TURN_MOVES = frozenset({"fakeout", "firstimpression", "matblock"})
REDIRECTION_MOVES = frozenset({"followme", "ragepowder", "spotlight", "allyswitch"})
KIND_NAMES = (
    "spread (hits both foes or everyone adjacent)",
    "Protect-like",
    "priority above 0",
    "first turn out only (Fake Out, First Impression, Mat Block)",
    "redirection (Follow Me, Rage Powder, Spotlight, Ally Switch)",
    "for the ally or our side (Helping Hand, Tailwind, Pollen Puff...)",
    "sets a weather or a terrain",
)

BLOCKS: tuple[Block, ...] = (
    Block(
        "own_team",
        TEAM_SIZE * 3,
        0.0,
        1.0,
        "6 x 3, our Pokémon in `battle.team` order (= switch sub-actions 1-6): HP fraction, "
        "active, fainted",
    ),
    next(b for b in SIMPLE_BLOCKS if b.name == "opponent_team"),  # the same features
    Block("present", SLOTS, 0.0, 1.0, f"an active Pokémon in each slot ({_SLOTS_TEXT})"),
    Block(
        "first_turn",
        SLOTS,
        0.0,
        1.0,
        "each active slot's Pokémon is on its first turn out (Fake Out, First Impression work)",
    ),
    Block(
        "active_types",
        SLOTS * len(TYPES),
        0.0,
        1.0,
        f"4 x {len(TYPES)}, multi-hot types of each active slot ({_SLOTS_TEXT}), order "
        f"{_names(TYPES)}",
    ),
    Block(
        "move_damage",
        MOVES * 2,
        0.0,
        MAX_MOVE_SCORE,
        "2 x 4 x 2, our actives' moves in sub-action slot order, each against the foe's a "
        "and b: base power / 100 x type multiplier, capped at 10; status moves, empty slots "
        "and empty foe slots 0",
    ),
    Block(
        "move_kind",
        MOVES * len(KIND_NAMES),
        0.0,
        1.0,
        f"2 x 4 x {len(KIND_NAMES)}, the same moves: " + ", ".join(KIND_NAMES),
    ),
    Block(
        "boosts",
        SLOTS * len(BOOSTS),
        -1.0,
        1.0,
        f"4 x {len(BOOSTS)}, stage / 6 of each active slot, order " + "/".join(BOOSTS),
    ),
    Block(
        "status",
        SLOTS * len(STATUSES),
        0.0,
        1.0,
        f"4 x {len(STATUSES)}, one-hot status of each active slot, order "
        f"{_names(STATUSES).upper()} (none: all 0)",
    ),
    Block(
        "field",
        7,
        0.0,
        1.0,
        "Trick Room; our Tailwind, the foe's Tailwind; a screen (Reflect, Light Screen, "
        "Aurora Veil) on our side, on the foe's; a weather; a terrain",
    ),
    Block("force_switch", 2, 0.0, 1.0, "our slot a, b must switch in now"),
    Block("fainted", 2, 0.0, 1.0, "fainted Pokémon / 6: ours, the opponent's"),
)


class DoublesBasicEncoder:
    """A small hand-made encoding of double battles (:data:`BLOCKS`); absent Pokémon leave
    their features at 0. ``game_types``: the battles it reads."""

    game_types = ("doubles",)

    def __init__(self) -> None:
        self.size = sum(b.size for b in BLOCKS)
        self.low = np.concatenate([np.full(b.size, b.low, np.float32) for b in BLOCKS])
        self.high = np.concatenate([np.full(b.size, b.high, np.float32) for b in BLOCKS])

    def encode(self, battle: DoubleBattle) -> np.ndarray:
        if not isinstance(battle, DoubleBattle):
            raise TypeError(f"the doubles encoder reads double battles, got {type(battle)}")
        out = [0.0] * self.size  # filled as a list: numpy item writes are slower
        i = _team_features(battle, out)
        actives = [*battle.active_pokemon, *battle.opponent_active_pokemon]
        foes = battle.opponent_active_pokemon
        for k, mon in enumerate(actives):
            out[i + k] = float(mon is not None)
            out[i + SLOTS + k] = float(mon is not None and mon.first_turn)
        i += 2 * SLOTS
        for mon in actives:
            if mon is not None:
                for t in mon.types:
                    out[i + _TYPE_INDEX[t]] = 1.0
            i += len(TYPES)
        i = _move_features(battle, foes, out, i)
        for mon in actives:
            if mon is not None:
                boosts = mon.boosts
                for k, stat in enumerate(BOOSTS):
                    out[i + k] = boosts.get(stat, 0) / 6.0
            i += len(BOOSTS)
        for mon in actives:
            if mon is not None and mon.status is not None:
                out[i + _STATUS_INDEX[mon.status]] = 1.0
            i += len(STATUSES)
        own, foe = battle.side_conditions, battle.opponent_side_conditions
        out[i] = float(Field.TRICK_ROOM in battle.fields)
        out[i + 1] = float(SideCondition.TAILWIND in own)
        out[i + 2] = float(SideCondition.TAILWIND in foe)
        out[i + 3] = float(any(c in own for c in _SCREENS))
        out[i + 4] = float(any(c in foe for c in _SCREENS))
        out[i + 5] = float(bool(battle.weather))
        out[i + 6] = float(any(f.is_terrain for f in battle.fields))
        i += 7
        out[i : i + 2] = [float(bool(f)) for f in battle.force_switch]
        i += 2
        out[i] = sum(mon.fainted for mon in battle.team.values()) / TEAM_SIZE
        out[i + 1] = sum(mon.fainted for mon in battle.opponent_team.values()) / TEAM_SIZE
        return np.array(out, dtype=np.float32)


def _team_features(battle: DoubleBattle, out: list[float]) -> int:
    """Fill the two team blocks; return the next index."""
    for k, mon in enumerate(list(battle.team.values())[:TEAM_SIZE]):
        out[3 * k : 3 * k + 3] = [mon.current_hp_fraction, float(bool(mon.active)), mon.fainted]
    i = 3 * TEAM_SIZE
    out[i : i + 4 * TEAM_SIZE : 4] = [1.0] * TEAM_SIZE  # unseen opponents count as full HP
    for k, mon in enumerate(list(battle.opponent_team.values())[:TEAM_SIZE]):
        j = i + 4 * k
        out[j : j + 4] = [mon.current_hp_fraction, 1.0, float(bool(mon.active)), mon.fainted]
    return i + 4 * TEAM_SIZE


def _move_features(
    battle: DoubleBattle, foes: list[Pokemon | None], out: list[float], i: int
) -> int:
    """Fill the two move blocks (damage against each foe, then kinds); return the next index."""
    kinds, width = i + MOVES * 2, len(KIND_NAMES)
    for pos in range(2):
        for k, move in enumerate(move_slots(battle, pos)):
            column = pos * NUM_MOVE_SLOTS + k
            if move.category != MoveCategory.STATUS:
                for f, foe in enumerate(foes):
                    if foe is not None:
                        score = move.base_power / 100.0 * _multiplier(move, foe)
                        out[i + 2 * column + f] = min(score, MAX_MOVE_SCORE)
            out[kinds + width * column : kinds + width * (column + 1)] = _kind(move)
    return kinds + MOVES * width


def _kind(move: Move) -> list[float]:
    return [
        float(move.target in SPREAD_TARGETS),
        float(move.is_protect_move),
        float(move.entry.get("priority", 0) > 0),  # Recharge's entry has no priority
        float(move.id in FIRST_TURN_MOVES),
        float(move.id in REDIRECTION_MOVES),
        float(move.target in ALLY_TARGETS),
        float(bool(move.weather or move.terrain)),
    ]
