"""The richer doubles encoder (``encoder="doubles_calc"``): the ``doubles`` features, then what a
damage-reading player (poke-env's heuristic among them) decides with and ``doubles`` leaves
out: each active's level and stats, who moves first between each of our actives and each
foe, each move's expected share of each foe's HP, its category, STAB and accuracy, how each
of our six matches up against the two foes, Terastallization, the turn.

Stats are exact for our Pokémon (the request's) and estimated for the opponent's (random
battle EVs/IVs, neutral nature: :func:`mapleenv.encoders.features.dex.estimated_stats`). The
damage estimate is the game's formula at the middle roll with STAB, type, spread (0.75),
burn and the boosts; abilities, items, weather, screens and crits are left out.
"""

from __future__ import annotations

import numpy as np
from poke_env.battle.double_battle import DoubleBattle
from poke_env.battle.field import Field
from poke_env.battle.move import Move
from poke_env.battle.move_category import MoveCategory
from poke_env.battle.pokemon import Pokemon
from poke_env.battle.side_condition import SideCondition
from poke_env.battle.status import Status

from mapleenv.actions.doubles import NUM_MOVE_SLOTS, move_slots
from mapleenv.encoders.doubles.basic import BLOCKS as DOUBLES_BLOCKS
from mapleenv.encoders.doubles.basic import SLOTS, SPREAD_TARGETS, DoublesBasicEncoder
from mapleenv.encoders.features import dex
from mapleenv.encoders.features.damage import boost_factor, boost_multiplier
from mapleenv.encoders.singles.basic import TEAM_SIZE, Block, _multiplier

STATS = ("hp", "atk", "def", "spa", "spd", "spe")
STAT_SCALE = 500.0  # a level-100 random-battle stat is rarely above this
MOVES = 2 * NUM_MOVE_SLOTS
MOVE_INFO = ("physical", "special", "STAB", "accuracy (always-hit: 1)")
MAX_TURN = 30
_SLOTS_TEXT = "our a, our b, the foe's a, the foe's b"

EXTRA_BLOCKS: tuple[Block, ...] = (
    Block(
        "active_stats",
        SLOTS * (1 + len(STATS)),
        0.0,
        1.0,
        f"4 x 7, each active slot ({_SLOTS_TEXT}): level / 100, then "
        f"{'/'.join(STATS)} / {STAT_SCALE:g} capped at 1 (ours exact, the foe's estimated)",
    ),
    Block(
        "speed",
        4,
        0.0,
        1.0,
        "our a vs the foe's a, our a vs b, our b vs a, our b vs b: 1 if ours moves first at "
        "equal priority (speed with boosts, paralysis, Tailwind, a known Choice Scarf; Trick "
        "Room reverses), 0.5 on a tie, 0 if not or a slot is empty",
    ),
    Block(
        "move_estimate",
        MOVES * 2,
        0.0,
        1.0,
        "2 x 4 x 2, our actives' moves in sub-action slot order against the foe's a and b: "
        "expected damage / the foe's current HP, capped at 1 (status moves, empty slots 0)",
    ),
    Block(
        "move_info",
        MOVES * len(MOVE_INFO),
        0.0,
        1.0,
        f"2 x 4 x {len(MOVE_INFO)}, the same moves: " + ", ".join(MOVE_INFO),
    ),
    Block(
        "matchups",
        TEAM_SIZE * 4,
        0.0,
        1.0,
        "6 x 4, our Pokémon in `battle.team` order: the best type multiplier of its damaging "
        "moves on the foe's a, on b, the worst multiplier of the foe's a's types on it, of "
        "b's (each / 4; empty foe slot, fainted or no damaging move 0)",
    ),
    Block(
        "tera",
        1 + SLOTS,
        0.0,
        1.0,
        f"we can Terastallize this turn; each active slot ({_SLOTS_TEXT}) is Terastallized",
    ),
    Block("turn", 1, 0.0, 1.0, f"turn / {MAX_TURN}, capped at 1"),
)
BLOCKS: tuple[Block, ...] = (*DOUBLES_BLOCKS, *EXTRA_BLOCKS)


class DoublesCalcEncoder:
    """``doubles`` (:class:`~mapleenv.encoders.doubles.basic.DoublesBasicEncoder`) plus
    :data:`EXTRA_BLOCKS`; reads double battles only."""

    game_types = ("doubles",)

    def __init__(self) -> None:
        self._base = DoublesBasicEncoder()
        self._extra = sum(b.size for b in EXTRA_BLOCKS)
        self.size = self._base.size + self._extra
        self.low = np.concatenate([np.full(b.size, b.low, np.float32) for b in BLOCKS])
        self.high = np.concatenate([np.full(b.size, b.high, np.float32) for b in BLOCKS])

    def encode(self, battle: DoubleBattle) -> np.ndarray:
        base = self._base.encode(battle)  # checks the battle is a doubles one
        out = [0.0] * self._extra
        ours, foes = battle.active_pokemon, battle.opponent_active_pokemon
        actives = [*ours, *foes]
        stats = [None if mon is None else _stats(mon, battle.gen) for mon in actives]
        i = 0
        for mon, st in zip(actives, stats, strict=True):
            if mon is not None and st is not None:
                out[i] = mon.level / 100.0
                out[i + 1 : i + 7] = [min(st[s] / STAT_SCALE, 1.0) for s in STATS]
            i += 7
        for a in range(2):
            for f in range(2):
                out[i] = _first(battle, ours[a], stats[a], foes[f], stats[2 + f])
                i += 1
        i = _moves(battle, stats, out, i)
        i = _matchups(battle, foes, out, i)
        out[i] = float(bool(battle.can_tera))
        out[i + 1 : i + 1 + SLOTS] = [
            float(bool(m is not None and m.is_terastallized)) for m in actives
        ]
        out[i + 1 + SLOTS] = min(battle.turn / MAX_TURN, 1.0)
        return np.concatenate([base, np.asarray(out, dtype=np.float32)])


def _stats(mon: Pokemon, gen: int) -> dict[str, float]:
    """Our Pokémon's stats from the request; an estimate where a stat is unknown."""
    known = mon.stats or {}
    if all(known.get(s) for s in STATS):
        return {s: float(known[s]) for s in STATS}
    estimate = dex.estimated_stats(gen, mon.species, mon.level)
    return {s: float(known.get(s) or estimate[s]) for s in STATS}


def _speed(battle: DoubleBattle, mon: Pokemon, stats: dict[str, float], ours: bool) -> float:
    speed = stats["spe"] * boost_multiplier(mon.boosts.get("spe", 0))
    if mon.status == Status.PAR:
        speed *= 0.5
    side = battle.side_conditions if ours else battle.opponent_side_conditions
    if SideCondition.TAILWIND in side:
        speed *= 2.0
    if mon.item == "choicescarf":
        speed *= 1.5
    return speed


def _first(
    battle: DoubleBattle,
    mon: Pokemon | None,
    stats: dict[str, float] | None,
    foe: Pokemon | None,
    foe_stats: dict[str, float] | None,
) -> float:
    if mon is None or foe is None or stats is None or foe_stats is None:
        return 0.0
    ours, theirs = _speed(battle, mon, stats, True), _speed(battle, foe, foe_stats, False)
    if ours == theirs:
        return 0.5
    faster = ours > theirs
    if Field.TRICK_ROOM in battle.fields:
        faster = not faster
    return float(faster)


def _moves(battle: DoubleBattle, stats: list, out: list[float], i: int) -> int:
    """Fill ``move_estimate`` and ``move_info``; return the next index."""
    info = i + MOVES * 2
    foes = battle.opponent_active_pokemon
    for pos in range(2):
        attacker = battle.active_pokemon[pos]
        for k, move in enumerate(move_slots(battle, pos)):
            column = pos * NUM_MOVE_SLOTS + k
            if attacker is None or move.category == MoveCategory.STATUS:
                continue
            stab = move.type in attacker.types
            physical = move.category == MoveCategory.PHYSICAL
            accuracy = 1.0 if move.accuracy is True else float(move.accuracy)
            out[info + 4 * column : info + 4 * column + 4] = [
                float(physical),
                float(not physical),
                float(stab),
                min(max(accuracy, 0.0), 1.0),
            ]
            for f, foe in enumerate(foes):
                if foe is not None and stats[pos] is not None and stats[2 + f] is not None:
                    damage = _damage(move, attacker, stats[pos], foe, stats[2 + f], stab)
                    foe_hp = foe.current_hp_fraction * stats[2 + f]["hp"]
                    out[i + 2 * column + f] = min(damage / foe_hp, 1.0) if foe_hp > 0 else 0.0
    return info + MOVES * len(MOVE_INFO)


def _damage(
    move: Move,
    attacker: Pokemon,
    stats: dict[str, float],
    defender: Pokemon,
    defender_stats: dict[str, float],
    stab: bool,
) -> float:
    """The middle roll of the damage formula (no abilities, items, weather or crits)."""
    physical = move.category == MoveCategory.PHYSICAL
    attack = stats["atk" if physical else "spa"]
    defense = max(defender_stats["def" if physical else "spd"], 1.0)
    base = (2 * attacker.level / 5 + 2) * move.base_power * attack / defense / 50 + 2
    factor = _multiplier(move, defender) * boost_factor(move, attacker, defender) * 0.925
    if stab:
        factor *= 1.5
    if move.target in SPREAD_TARGETS:
        factor *= 0.75
    if physical and attacker.status == Status.BRN:
        factor *= 0.5
    return base * factor


def _matchups(battle: DoubleBattle, foes: list[Pokemon | None], out: list[float], i: int) -> int:
    """Fill ``matchups``; return the next index."""
    for k, mon in enumerate(list(battle.team.values())[:TEAM_SIZE]):
        j = i + 4 * k
        if mon.fainted:
            continue
        for f, foe in enumerate(foes):
            if foe is not None:
                out[j + f], out[j + 2 + f] = _matchup(mon, foe)
    return i + 4 * TEAM_SIZE


_MATCHUPS: dict[tuple, tuple[float, float]] = {}


def _matchup(mon: Pokemon, foe: Pokemon) -> tuple[float, float]:
    """(best multiplier of ``mon``'s damaging moves on ``foe``, worst of ``foe``'s types on
    ``mon``), each / 4; memoized on the moves and both sides' types (like ``_multiplier``)."""
    key = (tuple(mon.moves), tuple(mon.types), tuple(foe.types), mon.gen)
    found = _MATCHUPS.get(key)
    if found is None:
        damaging = [m for m in mon.moves.values() if m.category != MoveCategory.STATUS]
        best = max((_multiplier(m, foe) for m in damaging), default=0.0)
        worst = max(mon.damage_multiplier(t) for t in foe.types)
        found = _MATCHUPS[key] = (best / 4.0, min(worst, 4.0) / 4.0)
    return found
