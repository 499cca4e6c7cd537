"""What one seat knows of a singles battle, as the JSON the search host builds worlds from.

Its own side comes from the seat's last request (exact: species, stats, HP, moves, item,
ability, Tera type) plus what poke-env tracked (boosts, volatiles, PP); the opponent's from
poke-env's reading of the protocol (revealed Pokémon, HP fraction, status, revealed moves,
item and ability when seen). Unknown values are ``None`` (an item ``""`` is a known lack
of one: consumed or knocked off). Each side also carries ``faints``, its ``|faint|``
messages in the log, and its active Pokémon what the log says that poke-env does not
keep (:mod:`mapleenv.search.log_facts`). ``mapleenv/js/search/state.js`` reads it.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from poke_env.battle.abstract_battle import AbstractBattle
from poke_env.battle.pokemon import Pokemon
from poke_env.data import GenData
from poke_env.player.battle_order import BattleOrder

from mapleenv.actions import by_slot
from mapleenv.search.log_facts import log_facts, log_faints

logger = logging.getLogger(__name__)

# Side conditions counted in layers by poke-env; the others hold the turn they started.
_LAYERED = {"spikes", "toxicspikes"}
# Longer than any id or name Showdown has (its nicknames have at most 18 characters): a
# server's longer text is cut before the search host reads it (a 1 MB item name made one
# search take 37 s)
MAX_ID = 40
_warned = False


def _id(text: Any) -> str:
    return re.sub(r"[^a-z0-9]+", "", str(text or "")[: 4 * MAX_ID].lower())[:MAX_ID]


def _name(text: Any) -> str:
    return str(text or "")[:MAX_ID]


def _count(text: str, what: str) -> int:
    """A count the server wrote (HP): ASCII digits, at most 9 of them, else a
    ``ValueError`` (``"1x"``, ``"²"``, ``"1e999"``): the view cannot be built."""
    if not (text.isascii() and text.isdecimal() and len(text) <= 9):
        raise ValueError(f"{what} {text[:40]!r} is not a number")
    return int(text)


def _enum_id(value: Any) -> str:
    return _id(getattr(value, "name", value))


def _status(mon: Pokemon) -> tuple[str, int]:
    status = _enum_id(mon.status) if mon.status is not None else ""
    return ("" if status == "fnt" else status), mon.status_counter


def _volatiles(mon: Pokemon) -> list[str]:
    return sorted(_enum_id(effect) for effect in mon.effects)


def _details(details: str) -> tuple[str, int, str]:
    """``"Garchomp, L74, F"`` -> species, level, gender."""
    parts = [p.strip() for p in details.split(",")]
    level, gender = 100, ""
    for part in parts[1:]:
        if re.fullmatch(r"L[0-9]{1,3}", part):
            level = int(part[1:])
        elif part in ("M", "F"):
            gender = part
    return _name(parts[0]), level, gender


def _active_extras(mon: Pokemon | None, request: dict[str, Any]) -> dict[str, Any]:
    """Boosts, volatiles and locks of an active Pokémon (empty for a benched one)."""
    if mon is None or not mon.active:
        return {}
    extras: dict[str, Any] = {
        "boosts": {k: v for k, v in mon.boosts.items() if k in ("atk", "def", "spa", "spd", "spe")}
        | {"accuracy": mon.boosts.get("accuracy", 0), "evasion": mon.boosts.get("evasion", 0)},
        "volatiles": _volatiles(mon),
        "protect_counter": mon.protect_counter,
    }
    enabled = [
        m["id"]
        for m in ((request.get("active") or [{}])[0].get("moves") or [])
        if not m.get("disabled")
    ]
    if len(enabled) == 1:  # a lock the request shows (choice item, Encore)
        extras["choice_move"] = extras["last_move"] = enabled[0]
    return extras


def _own_side(battle: AbstractBattle, request: dict[str, Any]) -> dict[str, Any]:
    by_ident = {mon.name: mon for mon in battle.team.values()}
    # the request's PP of the active Pokémon's moves is exact; poke-env counts the others
    active_pp = {
        _id(m.get("id")): m.get("pp")
        for m in ((request.get("active") or [{}])[0].get("moves") or ())
        if isinstance(m.get("pp"), int)
    }
    facts = log_facts(battle, battle.player_role or "", foe=False)
    pokemon = []
    for entry in (request.get("side") or {}).get("pokemon") or ():
        species, level, gender = _details(entry.get("details", ""))
        condition = str(entry.get("condition", "0 fnt"))
        hp_text, _, status_text = condition.partition(" ")
        hp, _, maxhp = hp_text.partition("/")
        mon = by_ident.get(entry.get("ident", "").partition(": ")[2])
        moves = []
        for move_id in entry.get("moves") or ():
            known = mon.moves.get(move_id) if mon is not None else None
            pp = active_pp.get(_id(move_id)) if entry.get("active") else None
            if pp is None and known is not None:
                pp = known.current_pp
            moves.append({"id": _id(move_id), "pp": pp})
        status, counter = _status(mon) if mon is not None else (status_text, 0)
        pokemon.append(
            {
                "name": _name(entry.get("ident", "").partition(": ")[2]),
                "species": species,
                "level": level,
                "gender": gender,
                "hp": _count(hp or "0", "HP"),
                "maxhp": _count(maxhp or hp or "1", "max HP"),
                "fainted": status_text == "fnt" or hp == "0",
                "status": "" if status_text == "fnt" else status,
                "status_turns": counter,
                "stats": entry.get("stats") or {},
                "moves": moves,
                "item": _id(entry.get("item")),
                "ability": _id(entry.get("ability") or entry.get("baseAbility")),
                "tera_type": _id(entry.get("teraType")) or None,
                "terastallized": bool(entry.get("terastallized")),
                "active": bool(entry.get("active")),
                **_active_extras(mon, request),
                **(facts if entry.get("active") else {}),
            }
        )
    active = request.get("active")
    # a forced switch's request has no active entry: Tera is left unless it was used
    can_tera = (
        active[0].get("canTerastallize") if active else battle.gen >= 9 and not battle.used_tera
    )
    return {
        "pokemon": pokemon,
        "conditions": _conditions(battle.side_conditions, battle.turn),
        "can_tera": bool(can_tera),
    }


def _foe_mon(mon: Pokemon, unknown_item: str, facts: dict[str, Any]) -> dict[str, Any]:
    status, counter = _status(mon)
    item = mon.item
    return {
        "species": _name(mon.species),
        "level": mon.level,
        "gender": {"MALE": "M", "FEMALE": "F"}.get(_enum_id(mon.gender).upper(), ""),
        "hp_fraction": mon.current_hp_fraction,
        "fainted": mon.fainted,
        "status": status,
        "status_turns": counter,
        "moves": [
            {"id": _id(move.id), "used": max(0, move.max_pp - move.current_pp)}
            for move in mon.moves.values()
        ],
        "item": None if item == unknown_item else _id(item),
        "ability": _id(mon.ability) or None,
        "tera_type": _enum_id(mon.tera_type) if mon.is_terastallized else None,
        "terastallized": mon.is_terastallized,
        "active": mon.active,
        **_active_extras(mon, {}),
        **(facts if mon.active else {}),
    }


def _conditions(conditions: dict[Any, int], turn: int) -> dict[str, int]:
    """Layers for spikes, the turns since a screen or hazard started for the others."""
    out = {}
    for condition, value in conditions.items():
        name = _enum_id(condition)
        out[name] = value if name in _LAYERED else max(0, turn - value)
    return out


def battle_view(battle: AbstractBattle) -> dict[str, Any]:
    """The JSON view of ``battle`` from its player's seat (see the module docs)."""
    request = battle.last_request or {}
    unknown_item = GenData.from_gen(battle.gen).UNKNOWN_ITEM
    field: dict[str, Any] = {
        "fields": {_enum_id(f): max(0, battle.turn - t) for f, t in battle.fields.items()}
    }
    for weather, start in battle.weather.items():
        field["weather"] = {"id": _enum_id(weather), "turns": max(0, battle.turn - start)}
    faints = log_faints(battle)  # both sides in one pass over the log
    foe_role = {"p1": "p2", "p2": "p1"}.get(battle.player_role or "", "")
    foe_facts = log_facts(battle, foe_role, foe=True) if foe_role else {}
    return {
        "format": battle.battle_tag.split("-")[1] if "-" in battle.battle_tag else battle.format,
        "turn": battle.turn,
        "me": {**_own_side(battle, request), "faints": faints[battle.player_role or ""]},
        "foe": {
            "pokemon": [
                _foe_mon(m, unknown_item, foe_facts) for m in battle.opponent_team.values()
            ],
            "conditions": _conditions(battle.opponent_side_conditions, battle.turn),
            "can_tera": battle.gen >= 9 and not battle.opponent_used_tera,
            "team_size": 6,
            "faints": faints[foe_role],
        },
        "field": field,
    }


def decision_view(battle: AbstractBattle, legal: dict[int, BattleOrder]) -> dict[str, Any]:
    """:func:`battle_view` plus what a searcher needs of the decision: ``choices`` (legal
    action -> simulator choice string), ``force_switch``, ``battle_tag``, and the seat's
    ``log`` (poke-env's split messages), ``role`` and ``gen``."""
    view = battle_view(battle)
    view["choices"] = {
        int(a): by_slot(order, battle).message.removeprefix("/choose ")
        for a, order in legal.items()
    }
    view["force_switch"] = bool(any((battle.last_request or {}).get("forceSwitch") or ()))
    view["battle_tag"] = battle.battle_tag
    # for the policy opponent model (mapleenv.search.opponent_model): the log to replay
    view.update(log=battle._replay_data, role=battle.player_role, gen=battle.gen)
    return view


def readable_view(battle: AbstractBattle, legal: dict[int, BattleOrder]) -> dict[str, Any] | None:
    """:func:`decision_view`, or ``None`` when the battle holds what the view cannot read
    (a server's text: an HP of ``"1x/277"``): that decision is the policy's own. Warned
    once per process, later ones at debug."""
    global _warned
    try:
        return decision_view(battle, legal)
    except Exception as exc:  # whatever the text broke: never the battle itself
        level = logging.DEBUG if _warned else logging.WARNING
        _warned = True
        logger.log(
            level,
            "search: cannot read %.100s at turn %s (%s: %.200s); the policy's pick stands%s",
            battle.battle_tag,
            battle.turn,
            type(exc).__name__,
            str(exc).replace("\n", " "),
            "" if level == logging.DEBUG else " (later ones at debug)",
        )
        return None
