"""Static, cached game data for the rich encoder.

Everything here depends only on species/move ids, types and the generation, so it is
computed once per process and memoised: type effectiveness, per-move static feature
vectors, estimated stats of opponents, and the likely moves of a species from the
pinned ``pokemon-showdown`` package's random-battle sets.
"""

from __future__ import annotations

import json
import logging
from functools import cache
from pathlib import Path

import numpy as np
from poke_env.battle import Move, MoveCategory, PokemonType
from poke_env.data import GenData
from poke_env.data.normalize import to_id_str
from poke_env.stats import compute_raw_stats

from mapleenv.encoders.features import vocab

logger = logging.getLogger(__name__)

STAT_NAMES = ("hp", "atk", "def", "spa", "spd", "spe")
# Random battles give every Pokémon 85 EVs and 31 IVs in each stat and a neutral nature.
RANDOM_BATTLE_EVS = [85] * 6
RANDOM_BATTLE_IVS = [31] * 6
NEUTRAL_NATURE = "serious"

# Stand-in moves (physical, special) for an opponent's STAB when nothing better is known.
STAB_STAND_INS: dict[PokemonType, tuple[str, str]] = {
    PokemonType.BUG: ("xscissor", "bugbuzz"),
    PokemonType.DARK: ("crunch", "darkpulse"),
    PokemonType.DRAGON: ("dragonclaw", "dragonpulse"),
    PokemonType.ELECTRIC: ("wildcharge", "thunderbolt"),
    PokemonType.FAIRY: ("playrough", "moonblast"),
    PokemonType.FIGHTING: ("drainpunch", "aurasphere"),
    PokemonType.FIRE: ("firepunch", "flamethrower"),
    PokemonType.FLYING: ("drillpeck", "airslash"),
    PokemonType.GHOST: ("shadowclaw", "shadowball"),
    PokemonType.GRASS: ("seedbomb", "energyball"),
    PokemonType.GROUND: ("earthquake", "earthpower"),
    PokemonType.ICE: ("icepunch", "icebeam"),
    PokemonType.NORMAL: ("bodyslam", "hypervoice"),
    PokemonType.POISON: ("poisonjab", "sludgebomb"),
    PokemonType.PSYCHIC: ("zenheadbutt", "psychic"),
    PokemonType.ROCK: ("stoneedge", "powergem"),
    PokemonType.STEEL: ("ironhead", "flashcannon"),
    PokemonType.WATER: ("waterfall", "surf"),
}


@cache
def type_table(gen: int) -> list[list[float]]:
    """``table[attacking][defending]`` multipliers indexed by ``PokemonType._value_``.

    Lists indexed by the enum's value avoid hashing enum members (a Python-level call in
    CPython 3.11) on the hot path. ``???`` and Stellar are neutral both ways.
    """
    chart = GenData.from_gen(gen).type_chart
    size = max(t._value_ for t in PokemonType) + 1
    table = [[1.0] * size for _ in range(size)]
    for att in vocab.TYPES:
        for dfn in vocab.TYPES:
            table[att._value_][dfn._value_] = chart[dfn.name][att.name]
    return table


def effectiveness(
    gen: int, attacking: PokemonType | None, defending: tuple[PokemonType, ...]
) -> float:
    """Type multiplier of an ``attacking`` type on a Pokémon of ``defending`` types."""
    if attacking is None:
        return 1.0
    row = type_table(gen)[attacking._value_]
    out = 1.0
    for t in defending:
        out *= row[t._value_]
    return out


def best_effectiveness(
    gen: int, attacking: tuple[PokemonType, ...], defending: tuple[PokemonType, ...]
) -> float:
    """Highest multiplier of any ``attacking`` type on ``defending`` types (0 if none)."""
    table = type_table(gen)
    best = 0.0
    for a in attacking:
        row = table[a._value_]
        m = 1.0
        for t in defending:
            m *= row[t._value_]
        if m > best:
            best = m
    return best


@cache
def move(gen: int, move_id: str) -> Move:
    """A shared poke-env ``Move`` for ``move_id`` (used for guessed moves only)."""
    return Move(move_id, gen)


def is_damaging(m: Move) -> bool:
    """Whether ``m`` deals direct damage (any physical or special move)."""
    return m.category is not MoveCategory.STATUS


@cache
def move_static(gen: int, move_id: str) -> tuple[np.ndarray, PokemonType | None, bool]:
    """(static features, type, damaging) of a move.

    The vector covers the ``base_power`` .. ``priority`` features and the effect flags
    of the ``moves`` block; the encoder writes it with two slice copies.
    """
    m = Move(move_id, gen)
    head = np.zeros(1 + len(vocab.TYPES) + 3 + 2, np.float32)
    head[0] = min(m.base_power, 250) / 250.0
    t = m.type
    if t in vocab.TYPE_INDEX:
        head[1 + vocab.TYPE_INDEX[t]] = 1.0
    cat = (MoveCategory.PHYSICAL, MoveCategory.SPECIAL, MoveCategory.STATUS).index(m.category)
    head[1 + len(vocab.TYPES) + cat] = 1.0
    head[-2] = min(max(float(m.accuracy), 0.0), 1.0)
    head[-1] = min(max(m.priority / 5.0, -1.0), 1.0)
    return np.concatenate([head, move_effects(m)]), t, is_damaging(m)


def move_effects(m: Move) -> np.ndarray:
    """The ``effects`` flags of a move (see :data:`vocab.MOVE_EFFECTS`)."""
    target = (m.entry.get("target") or "").lower()
    boosts = m.boosts or {}
    self_boost = m.self_boost or {}
    flags = {
        "heal": m.heal > 0 or m.drain > 0,
        "boost_self": (
            target in ("self", "allyside", "allies") and any(v > 0 for v in boosts.values())
        )
        or any(v > 0 for v in self_boost.values()),
        "lower_target": target not in ("self", "allyside", "allies")
        and any(v < 0 for v in boosts.values()),
        "inflict_status": m.status is not None
        or m.volatile_status is not None
        and m.volatile_status.name in ("CONFUSION", "YAWN", "LEECH_SEED", "TAUNT", "ENCORE"),
        "set_hazard": m.side_condition in vocab.HAZARDS,
        "clear_hazard": m.id in vocab.HAZARD_CLEARERS,
        "pivot": bool(m.self_switch),
        "protect": m.is_protect_move,
        "recoil": m.recoil > 0,
        "force_switch": m.force_switch,
        "set_field": m.weather is not None
        or m.terrain is not None
        or bool(m.entry.get("pseudoWeather"))
        or m.side_condition in vocab.SCREENS,
    }
    return np.asarray([flags[name] for name in vocab.MOVE_EFFECTS], np.float32)


@cache
def estimated_stats(gen: int, species: str, level: int) -> dict[str, int]:
    """Stats of ``species`` at ``level`` with random-battle EVs/IVs and a neutral nature."""
    values = compute_raw_stats(
        species, RANDOM_BATTLE_EVS, RANDOM_BATTLE_IVS, level, NEUTRAL_NATURE, GenData.from_gen(gen)
    )
    return dict(zip(STAT_NAMES, values, strict=True))


def _sets_file(gen: int) -> Path | None:
    try:
        from mapleenv.showdown.package import find_showdown

        package = find_showdown()
    except Exception as exc:  # noqa: BLE001 - any failure only disables the guesses
        logger.info("random-battle sets unavailable (%s); opponent moves fall back to STAB", exc)
        return None
    for sub in ("dist/data", "data"):
        path = package / sub / "random-battles" / f"gen{gen}" / "sets.json"
        if path.is_file():
            return path
    logger.info(
        "no random-battle sets for gen %d in %s; opponent moves fall back to STAB", gen, package
    )
    return None


@cache
def random_battle_movepools(gen: int) -> dict[str, tuple[str, ...]]:
    """Species id -> union of its random-battle movepools (move ids), or ``{}``."""
    path = _sets_file(gen)
    if path is None:
        return {}
    data = json.loads(path.read_text())
    out: dict[str, tuple[str, ...]] = {}
    for species, entry in data.items():
        moves: dict[str, None] = {}
        for s in entry.get("sets", []):
            for name in s.get("movepool", s.get("moves", [])):
                moves[to_id_str(name)] = None
        out[to_id_str(species)] = tuple(moves)
    return out


@cache
def likely_damaging_moves(
    gen: int, species: str, base_species: str, types: tuple[PokemonType, ...], physical: bool
) -> tuple[Move, ...]:
    """Damaging moves ``species`` likely has: its random-battle movepool, else STAB stand-ins."""
    pools = random_battle_movepools(gen)
    ids = pools.get(species) or pools.get(base_species) or ()
    moves = []
    for move_id in ids:
        try:
            m = move(gen, move_id)
            if is_damaging(m):
                moves.append(m)
        except Exception:  # noqa: BLE001 - an unknown id in the sets is skipped
            logger.debug("unknown move %s in %s's random-battle set", move_id, species)
    if not moves:
        moves = [
            move(gen, STAB_STAND_INS[t][0 if physical else 1]) for t in types if t in STAB_STAND_INS
        ]
    return tuple(moves)


@cache
def random_battle_sets(
    gen: int,
) -> dict[str, tuple[tuple[frozenset[str], frozenset[str], tuple[str, ...]], ...]]:
    """Species id -> its random-battle sets as ``(move ids, ability ids, Tera type
    names)``, from the pinned package's ``sets.json`` (``{}`` if unavailable)."""
    path = _sets_file(gen)
    if path is None:
        return {}
    data = json.loads(path.read_text())
    return {
        to_id_str(species): tuple(
            (
                frozenset(to_id_str(m) for m in s.get("movepool", s.get("moves", []))),
                frozenset(to_id_str(a) for a in s.get("abilities", [])),
                tuple(str(t).upper() for t in s.get("teraTypes", [])),
            )
            for s in entry.get("sets", [])
        )
        for species, entry in data.items()
    }
