"""A world's dump (``mapleenv/js/search/dump.js``: the exact Showdown battle state) as a
poke-engine ``State``, the seat as side one; and what the conversion had to leave out.

Ids go over as Showdown writes them (the engine's names are the same letters, checked once
each by :mod:`mapleenv.search.engine.names`); what the engine does not know is dropped and
listed in :attr:`Converted.dropped` (a move becomes the engine's ``none``, an item its
unknown item, a volatile is left off). Choice lock, Encore, Disable, Taunt and PP run out
are in the world's request: the moves it does not allow go over disabled.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import poke_engine as pe

from mapleenv.search.engine import names

# Showdown side conditions counted in layers -> the engine's field
_LAYERED = {"spikes": "spikes", "toxicspikes": "toxic_spikes", "stealthrock": "stealth_rock",
            "stickyweb": "sticky_web"}  # fmt: skip
# Showdown side conditions with turns left -> the engine's field
_TIMED = {"reflect": "reflect", "lightscreen": "light_screen", "auroraveil": "aurora_veil",
          "tailwind": "tailwind", "safeguard": "safeguard", "mist": "mist",
          "luckychant": "lucky_chant"}  # fmt: skip
# Volatiles whose turns the engine counts (VolatileStatusDurations) up from 0 as they pass,
# ending at the last count (it stops on any other): Showdown's turns left, counted down from
# the full duration, are the full duration less the engine's count. Slow Start counts down.
_COUNTED_UP = {"encore": 3, "taunt": 3, "yawn": 2}  # Showdown's full duration
_LAST_COUNT = {"encore": 2, "taunt": 2, "yawn": 1, "lockedmove": 2}
# Showdown volatiles that are no engine volatile but are carried otherwise (the request's
# disabled moves, side conditions, the substitute's HP) or are bookkeeping
_CARRIED = {"choicelock", "stall", "twoturnmove", "perishsong", "protosynthesis",
            "quarkdrive", "partiallytrapped", "lockedmove", "substitute", "confusion"}  # fmt: skip
_STATS = (("atk", "attack"), ("def", "defense"), ("spa", "special_attack"),
          ("spd", "special_defense"), ("spe", "speed"))  # fmt: skip


@dataclasses.dataclass
class Converted:
    """One world as an engine state, and what of it the engine could not be given."""

    state: pe.State
    dropped: list[str] = dataclasses.field(default_factory=list)
    # own choice string (the view's) -> the engine's name for it (None: it cannot play it)
    names: dict[str, str | None] = dataclasses.field(default_factory=dict)


def _named(kind: str, name: str, known: bool, dropped: list[str]) -> str:
    if known:
        return name
    if name:
        dropped.append(f"{kind}:{name}")
    return "none"


def _species(mon: Mapping[str, Any]) -> str:
    """The engine's species: the forme, or its base species where the engine lacks it."""
    species = mon["species"]
    return species if names.knows_species(species) else mon.get("base_species") or species


def _pokemon(
    mon: Mapping[str, Any], dropped: list[str], allowed: set[str] | None = None
) -> pe.Pokemon:
    species = _species(mon)
    if species != mon["species"]:  # a battle forme the engine names by its base
        dropped.append(f"species:{mon['species']}")
    types = [names.engine_type(t) for t in mon["types"]] + ["typeless"]
    base_types = [names.engine_type(t) for t in mon.get("base_types") or mon["types"]]
    base_types.append("typeless")
    status = names.STATUS.get(mon["status"] or "", "none")
    sleep_turns = rest_turns = 0
    if status == "sleep" and mon.get("status_time") is not None:
        if mon.get("rest"):
            rest_turns = max(0, int(mon["status_time"]) - 1)
        else:
            sleep_turns = max(0, int(mon["status_start"]) - int(mon["status_time"]))
    ability = mon.get("ability") or ""
    moves = [
        pe.Move(
            id=_named("move", m["id"], names.knows_move(m["id"]), dropped),
            pp=max(0, int(m["pp"])),
            disabled=bool(m.get("disabled"))
            or int(m["pp"]) <= 0
            or (allowed is not None and m["id"] not in allowed),
        )
        for m in mon["moves"]
    ]
    stats = {field: int(mon["stats"][stat]) for stat, field in _STATS}
    return pe.Pokemon(
        id=species,
        level=int(mon["level"]),
        types=(types[0], types[1]),
        base_types=(base_types[0], base_types[1]),
        hp=0 if mon.get("fainted") else int(mon["hp"]),
        maxhp=int(mon["maxhp"]),
        ability=_named("ability", ability, names.knows_ability(ability), dropped),
        base_ability=_named("ability", mon.get("base_ability") or ability,
                            names.knows_ability(mon.get("base_ability") or ability), []),
        item=_named("item", mon["item"], names.knows_item(mon["item"]), dropped)
        if mon["item"]
        else "none",
        status=status,
        rest_turns=rest_turns,
        sleep_turns=sleep_turns,
        weight_kg=float(mon.get("weight_kg") or 0.0),
        terastallized=bool(mon.get("terastallized")),
        tera_type=names.engine_type(mon.get("terastallized") or mon.get("tera_type") or ""),
        moves=moves,
        **stats,
    )  # fmt: skip


def _volatiles(active: Mapping[str, Any], dropped: list[str]) -> set[str]:
    out = set()
    for raw, entry in (active.get("volatiles") or {}).items():
        name = raw
        if raw in ("protosynthesis", "quarkdrive") and entry.get("stat"):
            name = raw + entry["stat"]
        elif raw == "perishsong" and entry.get("duration"):
            name = f"perish{min(4, max(1, int(entry['duration']) - 1))}"
        elif raw == "twoturnmove" and entry.get("move"):
            name = entry["move"]
        if names.knows_volatile(name):
            out.add(name)
        elif raw not in _CARRIED:
            dropped.append(f"volatile:{raw}")
    if "confusion" in (active.get("volatiles") or {}):
        out.add("confusion")
    if "partiallytrapped" in (active.get("volatiles") or {}):
        out.add("partiallytrapped")
    if "lockedmove" in (active.get("volatiles") or {}):
        out.add("lockedmove")
    if "substitute" in (active.get("volatiles") or {}):
        out.add("substitute")
    return out


def _last_used(active: Mapping[str, Any], index: int) -> str:
    """The engine's last used move: the move slot the active last used (Encore's move when
    encored), a switch when it came in this turn, else none."""
    volatiles = active.get("volatiles") or {}
    last = (volatiles.get("encore") or {}).get("move") or active.get("last_move") or ""
    ids = [m["id"] for m in active["moves"]]
    if last in ids:
        return f"move:{ids.index(last)}"
    if int(active.get("active_turns") or 0) <= 1:
        return f"switch:{index}"
    return "move:none"


def _allowed(active: Mapping[str, Any], choices: list[str] | None) -> set[str] | None:
    """The moves the active may choose: those the seat's choices name (its real request's:
    a world's fresh request knows no choice lock), else what its volatiles leave (a choice
    lock its one move, Disable all but one); None: all of them."""
    ids = {m["id"] for m in active["moves"]}
    if choices is not None:
        return {c.removesuffix("-tera") for c in choices if not c.startswith("switch ")}
    volatiles = active.get("volatiles") or {}
    locked = (volatiles.get("choicelock") or {}).get("move")
    if locked in ids:
        return {locked}
    disabled = (volatiles.get("disable") or {}).get("move")
    return ids - {disabled} if disabled in ids else None


def _durations(volatiles: Mapping[str, Any]) -> dict[str, int]:
    """The engine's volatile counters from Showdown's turns left (see ``_COUNTED_UP``)."""

    def left(name: str, key: str = "duration") -> int | None:
        value = (volatiles.get(name) or {}).get(key)
        return None if value is None else int(value)

    out = {}
    for name, full in _COUNTED_UP.items():
        turns = left(name)
        out[name] = 0 if turns is None else min(_LAST_COUNT[name], max(0, full - turns))
    # a rampage's turns left (lockedmove's trueDuration); the engine plays three in all
    turns = left("lockedmove", "true_duration")
    out["lockedmove"] = 0 if turns is None else min(_LAST_COUNT["lockedmove"], max(0, 3 - turns))
    out["slowstart"] = min(6, max(0, left("slowstart") or 0))
    out["confusion"] = min(5, max(0, left("confusion", "time") or 0))
    return out


def _side(side: Mapping[str, Any], dropped: list[str], choices: list[str] | None = None) -> pe.Side:
    mons = side["pokemon"]
    index = next((i for i, m in enumerate(mons) if m.get("active")), 0)
    active = mons[index]
    volatiles = active.get("volatiles") or {}
    allowed = None if active.get("fainted") else _allowed(active, choices)
    conditions = {}
    for raw, entry in (side.get("conditions") or {}).items():
        if raw in _LAYERED:
            conditions[_LAYERED[raw]] = int(entry.get("layers") or 1)
        elif raw in _TIMED:
            conditions[_TIMED[raw]] = int(entry.get("duration") or 1)
        else:
            dropped.append(f"side:{raw}")
    if active.get("status") == "tox":
        conditions["toxic_count"] = int(active.get("toxic_stage") or 0)
    stall = (volatiles.get("stall") or {}).get("counter")
    if stall:
        conditions["protect"] = max(1, round(math.log(float(stall), 3)))
    durations = _durations(volatiles)
    slot = side.get("slot") or {}
    wish = slot.get("wish")
    future = slot.get("futuremove")
    future_source = "0"
    if future and future.get("source"):
        species = [m["species"] for m in mons]
        future_source = str(species.index(future["source"])) if future["source"] in species else "0"
    boosts = active.get("boosts") or {}
    return pe.Side(
        pokemon=[_pokemon(m, dropped, allowed if i == index else None) for i, m in enumerate(mons)],
        active_index=str(index),
        volatile_status_durations=pe.VolatileStatusDurations(**durations),
        wish=(int(wish.get("duration") or 0), int(wish.get("hp") or 0)) if wish else (0, 0),
        future_sight=(int(future.get("duration") or 0), future_source) if future else (0, "0"),
        force_trapped=bool(side.get("trapped")) and not active.get("fainted"),
        volatile_statuses=_volatiles(active, dropped),
        substitute_health=int((volatiles.get("substitute") or {}).get("hp") or 0),
        attack_boost=int(boosts.get("atk", 0)),
        defense_boost=int(boosts.get("def", 0)),
        special_attack_boost=int(boosts.get("spa", 0)),
        special_defense_boost=int(boosts.get("spd", 0)),
        speed_boost=int(boosts.get("spe", 0)),
        accuracy_boost=int(boosts.get("accuracy", 0)),
        evasion_boost=int(boosts.get("evasion", 0)),
        last_used_move=_last_used(active, index),
        side_conditions=pe.SideConditions(**conditions),
    )


def _turns(value: Any) -> int:
    """Turns left as the engine counts them (-1: no end the world knows of)."""
    return int(value) if value else -1


def to_state(dump: Mapping[str, Any]) -> Converted:
    """The engine state of one dumped world (side one: the seat), with what was dropped."""
    dropped: list[str] = []
    field = dump.get("field") or {}
    weather = names.WEATHER.get(field.get("weather") or "")
    if weather is None:
        dropped.append(f"weather:{field['weather']}")
        weather = "none"
    terrain = names.TERRAIN.get(field.get("terrain") or "", "none")
    pseudo = field.get("pseudo") or {}
    for raw in pseudo:
        if raw != "trickroom" and not raw.endswith("clausemod") and raw != "sleepclausemod":
            dropped.append(f"field:{raw}")
    own_names = (dump.get("names") or {}).get("me") or {}
    named = [n for n in own_names.values() if n] or None
    state = pe.State(
        side_one=_side(dump["me"], dropped, named if not dump["me"].get("force_switch") else None),
        side_two=_side(dump["foe"], dropped),
        weather=weather,
        weather_turns_remaining=_turns(field.get("weather_turns")) if weather != "none" else 0,
        terrain=terrain,
        terrain_turns_remaining=_turns(field.get("terrain_turns")) if terrain != "none" else 0,
        trick_room="trickroom" in pseudo,
        trick_room_turns_remaining=int(pseudo.get("trickroom") or 0),
    )
    species = {m["species"]: _species(m) for m in dump["me"]["pokemon"]}
    checked = {}
    for choice, name in own_names.items():
        if name and name.startswith("switch "):
            name = "switch " + species.get(name[7:], name[7:])
        checked[choice] = name if name and _playable(name) else None
    return Converted(state=state, dropped=dropped, names=checked)


def _playable(name: str) -> bool:
    """Whether the engine can play a choice it names so (its move or species is known)."""
    if name.startswith("switch "):
        return names.knows_species(name[7:])
    return names.knows_move(name.removesuffix("-tera"))
