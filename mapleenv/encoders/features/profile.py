"""Cached pieces of the rich encoding: static move data, per-Pokémon profiles, effective
speed and Tera types from the request (used by ``SinglesEntitiesEncoder``)."""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

import numpy as np
from poke_env.battle import AbstractBattle, Move, Pokemon, PokemonType, SideCondition
from poke_env.battle import Status as St
from poke_env.data import GenData

from mapleenv.encoders.features import dex, layout, vocab

logger = logging.getLogger(__name__)

UNKNOWN_ITEM = GenData.UNKNOWN_ITEM
_BOOST_MULT = {i: (2 + i) / 2 if i >= 0 else 2 / (2 - i) for i in range(-6, 7)}
_P = layout.Block("pokemon", 1, layout.POKEMON, "").offsets
_M = layout.Block("move", 1, layout.MOVE, "").offsets
_WIDTH = {b.name: b.width for b in layout.LAYOUT}
_MOVE_STATIC = _M["base_power"]  # moves block: static per move id from here on
_PROFILE = _P["level"]  # pokemon block: cached per-Pokémon profile from here on


_EMPTY_STATIC = (np.zeros(_WIDTH["moves"] - _MOVE_STATIC, np.float32), None, False)
_static_cache: dict[tuple[int, str], tuple[np.ndarray, PokemonType | None, bool]] = {}


def move_static(gen: int, move_id: str) -> tuple[np.ndarray, PokemonType | None, bool]:
    """:func:`dex.move_static`, with unknown ids (e.g. ``recharge``) as an empty move."""
    key = (gen, move_id)
    found = _static_cache.get(key)
    if found is None:
        try:
            found = dex.move_static(gen, move_id)
        except Exception:  # noqa: BLE001 - ids missing from poke-env's move data
            logger.debug("no move data for %r; encoded as an empty move", move_id)
            found = _EMPTY_STATIC
        _static_cache[key] = found
    return found


_max_pp: dict[tuple[int, str, bool], int] = {}


def move_max_pp(m: Move) -> int:
    """``m.max_pp``, cached per move id for plain moves (a GenData look-up each time)."""
    if type(m) is not Move:
        return m.max_pp
    key = (m._gen, m._id, m._from_transform)
    found = _max_pp.get(key)
    if found is None:
        found = _max_pp[key] = m.max_pp
    return found


def request_tera_types(battle: AbstractBattle) -> dict[str, PokemonType]:
    """Our Pokémon's Tera types by name, from the last request (poke-env only learns a
    Tera type when the Pokémon terastallizes)."""
    request = battle.last_request
    side = request.get("side") if request else None
    if not side:
        return {}
    out = {}
    for entry in side.get("pokemon", ()):
        name = entry.get("teraType")
        tera = _TERA_BY_NAME.get(name.lower()) if name else None
        if tera is not None:
            out[entry["ident"][4:]] = tera
    return out


_TERA_BY_NAME = {t.name.lower(): t for t in vocab.TERA_TYPES}
_TYPE_BY_CODE = {t._value_: t for t in PokemonType}
_TERA_BY_CODE = {t._value_: t for t in vocab.TERA_TYPES}
_STATUS_BY_CODE = {s._value_: s for s in St}
VOLATILE_CODES = tuple(
    frozenset(e._value_ for e in group) for group in vocab.VOLATILE_EFFECTS.values()
)


def speeds(battle: AbstractBattle, me: Pokemon, opp: Pokemon) -> tuple[float, float]:
    """Our active's and the opposing active's effective Speed (theirs estimated from the
    species when unknown; 0: not known)."""
    mine = effective_speed(me, me.stats.get("spe"), battle.side_conditions)
    est = opp.stats.get("spe") or dex.estimated_stats(battle.gen, opp.species, opp.level)["spe"]
    return mine, effective_speed(opp, est, battle.opponent_side_conditions)


def effective_speed(mon: Pokemon, stat: int | None, side: dict[SideCondition, int]) -> float:
    if not stat:
        return 0.0
    speed = stat * _BOOST_MULT[max(-6, min(6, mon.boosts.get("spe", 0)))]
    if mon.status is St.PAR:
        speed *= 0.5
    if mon.item == "choicescarf":
        speed *= 1.5
    if SideCondition.TAILWIND in side:
        speed *= 2.0
    return speed


def pokemon_profile(key: tuple[Any, ...]) -> tuple[np.ndarray, tuple[PokemonType, ...]]:
    """A Pokémon's cached block tail (``level`` onwards) and the types it attacks with.

    Built from pieces cached on the few inputs each reads (a new status, item or revealed
    move then costs one small piece, not the whole tail)."""
    (
        gen,
        _,
        level,
        type_codes,
        tera_code,
        terastallized,
        base_stats,
        status_code,
        counter,
        item,
        ability,
        moves,
        opponent,
    ) = key
    v = np.concatenate(
        (
            _identity_part(level, type_codes, tera_code, terastallized, base_stats),
            _status_part(status_code, counter),
            _item_part(item),
            _ability_part(ability),
        )
    )
    return v, _attack_types(gen, type_codes, moves, opponent)


def _at(name: str) -> int:
    return _P[name] - _PROFILE


_STATUS_START, _ITEM_START, _ABILITY_START = _at("status"), _at("item_known"), _at("ability_known")
_PIECES = 4096  # entries per piece cache


@lru_cache(maxsize=_PIECES)
def _identity_part(
    level: int,
    type_codes: tuple[int, ...],
    tera_code: int,
    terastallized: bool,
    base_stats: tuple[int, ...],
) -> np.ndarray:
    """Features ``level`` .. ``base_stats``."""
    v = np.zeros(_STATUS_START, np.float32)
    v[_at("level")] = min(level, 100) / 100.0
    for t in (_TYPE_BY_CODE[c] for c in type_codes):
        k = vocab.TYPE_INDEX.get(t)
        if k is not None:
            v[_at("types") + k] = 1.0
    tera = _TERA_BY_CODE.get(tera_code)
    if tera in vocab.TERA_INDEX:
        v[_at("tera_type") + vocab.TERA_INDEX[tera]] = 1.0
        v[_at("tera_known")] = 1.0
    v[_at("terastallized")] = terastallized
    k = _at("base_stats")
    v[k : k + 6] = np.minimum(np.asarray(base_stats, np.float32) / 255.0, 1.0)
    return v


@lru_cache(maxsize=_PIECES)
def _status_part(status_code: int, counter: int) -> np.ndarray:
    """Features ``status`` and ``status_turns``."""
    v = np.zeros(_ITEM_START - _STATUS_START, np.float32)
    status = _STATUS_BY_CODE.get(status_code)
    if status is not None and status is not St.FNT:
        v[_at("status") - _STATUS_START + vocab.STATUS_INDEX[status]] = 1.0
        v[_at("status_turns") - _STATUS_START] = min(counter, 8) / 8.0
    return v


@lru_cache(maxsize=_PIECES)
def _item_part(item: str | None) -> np.ndarray:
    """Features ``item_known`` .. ``item_flags``."""
    v = np.zeros(_ABILITY_START - _ITEM_START, np.float32)
    if item != UNKNOWN_ITEM:
        v[_at("item_known") - _ITEM_START] = 1.0
        if not item:
            v[_at("item_none") - _ITEM_START] = 1.0
        else:
            k = vocab.ITEM_INDEX.get(item)
            if k is None:
                k = vocab.BERRY_INDEX if item.endswith("berry") else vocab.OTHER_ITEM
            v[_at("item_flags") - _ITEM_START + k] = 1.0
    return v


@lru_cache(maxsize=_PIECES)
def _ability_part(ability: str | None) -> np.ndarray:
    """Features ``ability_known`` and ``ability_flags``."""
    v = np.zeros(_WIDTH["own_team"] - _PROFILE - _ABILITY_START, np.float32)
    if ability:
        v[_at("ability_known") - _ABILITY_START] = 1.0
        k = _at("ability_flags") - _ABILITY_START
        v[k + vocab.ABILITY_INDEX.get(ability, vocab.OTHER_ABILITY)] = 1.0
    return v


@lru_cache(maxsize=_PIECES)
def _attack_types(
    gen: int, type_codes: tuple[int, ...], moves: tuple[str, ...], opponent: bool
) -> tuple[PokemonType, ...]:
    """The types a Pokémon attacks with: its known damaging moves' (an opponent with none
    revealed: its own types)."""
    attack = [
        t
        for move_id in moves[:4]
        for _, t, damaging in [move_static(gen, move_id)]
        if damaging and t is not None
    ]
    if opponent and not moves:
        attack = [_TYPE_BY_CODE[c] for c in type_codes]
    return tuple(dict.fromkeys(attack))
