"""How closely poke-engine's one turn matches Showdown's: real battles played inside the
simulator with both teams known (``mapleenv/js/search/engine_turns.js``), the state before a
turn converted (:func:`~mapleenv.search.engine.state.to_state`), the same pair of choices
played by the engine (``generate_instructions``: its branches with their chances) and
compared, mechanic by mechanic, with what Showdown did.

A mechanic agrees when Showdown's outcome is one of the engine's branches (a speed tie, a
miss, a secondary effect are branches); damage agrees when Showdown's first hit lies in the
engine's roll range for that move (``calculate_damage`` on the state right before the move,
its maximum roll x 0.85 to x 1, the critical roll's range on a critical hit, 1 HP either side
for rounding). Turns a U-turn or an Eject Button cut (a mid-turn switch) are compared on move
order and damage only.
"""

from __future__ import annotations

import collections
import copy
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import poke_engine as pe

from mapleenv.search.engine import names
from mapleenv.search.engine.state import to_state
from mapleenv.showdown.child import NodeChild

SCRIPT = Path(__file__).resolve().parents[2] / "js" / "search" / "engine_turns.js"
BATTLES_TIMEOUT_S = 1800.0  # the battles of one check (40 take ~30 s)
MECHANICS = ("order", "damage", "faint", "status", "boosts", "switch", "hazards", "screens",
             "weather", "item")  # fmt: skip
_ROLL_TOLERANCE = 1  # HP either side of the engine's roll range (rounding order)
_HAZARDS = ("spikes", "toxic_spikes", "stealth_rock", "sticky_web")
_SCREENS = ("reflect", "light_screen", "aurora_veil", "tailwind", "safeguard")
_SD_HAZARDS = {"spikes": "spikes", "toxicspikes": "toxic_spikes",
               "stealthrock": "stealth_rock", "stickyweb": "sticky_web"}  # fmt: skip
_SD_SCREENS = {"reflect": "reflect", "lightscreen": "light_screen",
               "auroraveil": "aurora_veil", "tailwind": "tailwind",
               "safeguard": "safeguard"}  # fmt: skip
_BOOSTS = ("attack", "defense", "special_attack", "special_defense", "speed", "accuracy",
           "evasion")  # fmt: skip
_SD_BOOSTS = ("atk", "def", "spa", "spd", "spe", "accuracy", "evasion")
_FIRST = re.compile(r"SetLastUsedMove (SideOne|SideTwo): \S+ -> Move")


def battles(seed: int, count: int, every: int, node: str, sim: str | None = None) -> Iterator[dict]:
    """The sampled turns of ``count`` real battles under ``seed`` (one record each)."""
    cmd = [node, str(SCRIPT), "--seed", str(seed), "--battles", str(count), "--every", str(every)]
    if sim:
        cmd += ["--sim", sim]
    with NodeChild(cmd, name=SCRIPT.name) as child:  # RuntimeError: its death, one line
        out = child.communicate(b"", timeout=BATTLES_TIMEOUT_S)
    for line in out.splitlines():
        yield json.loads(line)


def _engine_name(side: Mapping[str, Any], name: str | None) -> str | None:
    """A choice's dump name as ``generate_instructions`` takes it (a switch: the engine's
    species alone; its MCTS writes ``switch <species>``)."""
    if not name:
        return None
    if name.startswith("switch "):
        mon = next((m for m in side["pokemon"] if m["species"] == name[7:]), None)
        if mon is None:
            return None
        species = mon["species"] if names.knows_species(mon["species"]) else mon["base_species"]
        return species if names.knows_species(species) else None
    return name if names.knows_move(name.removesuffix("-tera")) else None


def _move_id(side: Mapping[str, Any], choice: str) -> str | None:
    """The move id a ``move N`` choice names (None for a switch)."""
    parts = choice.split(" ")
    if parts[0] != "move":
        return None
    return side["pokemon"][0]["moves"][int(parts[1]) - 1]["id"]


def _probe(dump: Mapping[str, Any], choices: Mapping[str, str]) -> dict[str, Any]:
    """A copy of ``dump`` whose engine state records every move used (a bench Encore turns
    the engine's last-used-move tracking on; no last move, so each use is written): the
    first ``SetLastUsedMove`` of a branch names the side that moved first."""
    probe = copy.deepcopy(dump)
    for key in ("me", "foe"):
        active = probe[key]["pokemon"][0]
        active["last_move"] = ""
        active["active_turns"] = max(2, int(active.get("active_turns") or 2))
        (active.get("volatiles") or {}).pop("encore", None)
    target = choices["p1"].split(" ")
    bench = 4 if target[0] == "switch" and target[1] == "6" else 5
    mon = probe["me"]["pokemon"][bench]
    if len(mon["moves"]) >= 4:
        mon["moves"][3] = {"id": "encore", "pp": 8, "maxpp": 8, "disabled": True}
    else:
        mon["moves"].append({"id": "encore", "pp": 8, "maxpp": 8, "disabled": True})
    return probe


def _first_movers(record: Mapping[str, Any], moves: tuple[str, str]) -> set[str]:
    probe = to_state(_probe(record["before"], record["choices"])).state
    firsts = set()
    for branch in pe.generate_instructions(probe, *moves):
        found = _FIRST.search(repr(branch.instruction_list))
        if found and branch.percentage > 0:
            firsts.add("p1" if found.group(1) == "SideOne" else "p2")
    return firsts


def _showdown_first(log: list[str]) -> str | None:
    for line in log:
        parts = line.split("|")
        if len(parts) > 2 and parts[1] in ("move", "cant"):
            return parts[2][:2]
    return None


def _exact_hp(log: list[str], start: int, defender: str) -> tuple[int | None, bool]:
    """After the attacker's ``|move|`` line at/after ``start``: the defender's exact HP after
    the move's first direct hit (None: no direct hit seen) and whether it was critical."""
    crit = False
    i = start
    while i < len(log) and not log[i].startswith("|move|"):
        i += 1
    for j in range(i + 1, len(log)):
        parts = log[j].split("|")
        kind = parts[1] if len(parts) > 1 else ""
        if kind in ("move", "cant", "upkeep", "turn", "") or "Substitute" in log[j]:
            return None, crit
        if kind == "-crit" and parts[2].startswith(defender):
            crit = True
        if kind == "split" and j + 1 < len(log):
            line = log[j + 1].split("|")
            if line[1] == "-damage" and line[2].startswith(defender) and len(line) == 4:
                return int(line[3].split("/")[0].split(" ")[0]), crit
    return None, crit


def _damage(record: Mapping[str, Any], first: str | None) -> list[tuple[bool, str]]:
    """Each move action's first hit against the engine's rolls: (agrees, note)."""
    out = []
    for entry in record["moves"]:
        side = entry["side"]
        defender = "p2a" if side == "p1" else "p1a"
        hp_after, crit = _exact_hp(record["log"], entry["log_index"], defender)
        if hp_after is None or not names.knows_move(entry["move"]):
            continue
        dump = entry["dump"]
        other = dump["foe" if side == "p1" else "me"]["pokemon"][0]
        hp_before = int(other["hp"])
        other_choice = record["choices"]["p2" if side == "p1" else "p1"]
        other_move = _move_id(record["before"]["foe" if side == "p1" else "me"], other_choice)
        if not other_move or not names.knows_move(other_move):
            other_move = "tackle"
        moves = (entry["move"], other_move) if side == "p1" else (other_move, entry["move"])
        try:
            rolls = pe.calculate_damage(to_state(dump).state, *moves, first == "p1")
        except BaseException as err:  # noqa: BLE001 (a Rust panic is a BaseException)
            if isinstance(err, KeyboardInterrupt):
                raise
            continue
        rolls = rolls[0] if side == "p1" else rolls[1]
        top = rolls[1] if crit and len(rolls) > 1 else rolls[0]
        low = top if len(rolls) == 1 else int(top * 0.85)
        dealt = hp_before - hp_after
        if hp_after == 0:
            agree = top + _ROLL_TOLERANCE >= dealt
        else:
            agree = low - _ROLL_TOLERANCE <= dealt <= top + _ROLL_TOLERANCE
        note = f"{side} {entry['move']} dealt {dealt} (engine {low}-{top}{' crit' if crit else ''})"
        out.append((agree, note))
    return out


def _engine_outcome(state: pe.State, slots: list[list[int]]) -> dict[str, Any]:
    """The compared facts of an engine state, Pokémon by team slot."""
    out: dict[str, Any] = {}
    for key, side in (("p1", state.side_one), ("p2", state.side_two)):
        order = slots[0 if key == "p1" else 1]
        mons = {order[i]: m for i, m in enumerate(side.pokemon)}
        active = order[int(side.active_index)]
        out[key] = {
            "hp": {s: m.hp for s, m in mons.items()},
            "status": {s: m.status.lower() if m.hp > 0 else "none" for s, m in mons.items()},
            "item": {s: m.item.lower() for s, m in mons.items()},
            "active": active,
            "boosts": tuple(getattr(side, f"{b}_boost") for b in _BOOSTS),
            "hazards": tuple(getattr(side.side_conditions, h) for h in _HAZARDS),
            "screens": tuple(getattr(side.side_conditions, s) > 0 for s in _SCREENS),
        }
    out["weather"] = state.weather.lower() if state.weather_turns_remaining != 0 else "none"
    return out


def _showdown_outcome(dump: Mapping[str, Any], slots: list[list[int]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, side_key in (("p1", "me"), ("p2", "foe")):
        side = dump[side_key]
        order = slots[0 if key == "p1" else 1]
        mons = {order[i]: m for i, m in enumerate(side["pokemon"])}
        active = order[0]  # a singles active holds the side's first place, fainted or not
        boosts = side["pokemon"][0].get("boosts") or {}
        conditions = side.get("conditions") or {}
        out[key] = {
            "hp": {s: int(m["hp"]) for s, m in mons.items()},
            "status": {s: names.STATUS.get(m["status"] or "", "none") for s, m in mons.items()},
            "item": {s: m["item"] or "none" for s, m in mons.items()},
            "active": active,
            "boosts": tuple(int(boosts.get(b, 0)) for b in _SD_BOOSTS),
            "hazards": tuple(
                int((conditions.get(sd) or {}).get("layers") or 0) if sd in conditions else 0
                for sd, _ in sorted(_SD_HAZARDS.items(), key=lambda kv: _HAZARDS.index(kv[1]))
            ),
            "screens": tuple(
                sd in conditions
                for sd, _ in sorted(_SD_SCREENS.items(), key=lambda kv: _SCREENS.index(kv[1]))
            ),
        }
    weather = (dump.get("field") or {}).get("weather") or ""
    out["weather"] = names.WEATHER.get(weather, weather)
    return out


def _facts(outcome: Mapping[str, Any], before_active: Mapping[str, int]) -> dict[str, Any]:
    """Per mechanic, the value two outcomes are compared on (None: not compared)."""
    p1, p2 = outcome["p1"], outcome["p2"]
    stayed = [
        s["boosts"] if s["active"] == before_active[k] and s["hp"][s["active"]] > 0 else None
        for k, s in (("p1", p1), ("p2", p2))
    ]
    return {
        "faint": tuple(s["hp"][before_active[k]] == 0 for k, s in (("p1", p1), ("p2", p2))),
        "status": tuple(
            tuple(sorted((slot, st) for slot, st in s["status"].items() if s["hp"][slot] > 0))
            for s in (p1, p2)
        ),
        "boosts": tuple(stayed),
        "switch": (p1["active"], p2["active"]),
        "hazards": (p1["hazards"], p2["hazards"]),
        "screens": (p1["screens"], p2["screens"]),
        "weather": outcome["weather"],
        "item": tuple(s["item"][before_active[k]] for k, s in (("p1", p1), ("p2", p2))),
    }


def _switched_instead(record: Mapping[str, Any]) -> bool:
    """Whether a side whose recorded choice is a move switched before any move was used."""
    for side, choice in record["choices"].items():
        if not choice.startswith("move"):
            continue
        for line in record["log"]:
            if line.startswith("|move|"):
                break
            if line.startswith(f"|switch|{side}a"):
                return True
    return False


def compare(record: Mapping[str, Any]) -> dict[str, list[tuple[bool, str]]] | str:
    """One sampled turn: per mechanic, (agrees, note) for each comparison made; or why the
    turn could not be compared (an unnamed choice, the engine failing)."""
    before = record["before"]
    choices = record["choices"]
    if _switched_instead(record):
        return "a side chose a move but switched first (not the pair recorded; not traced)"
    moves = (
        _engine_name(before["me"], before["names"]["me"].get(choices["p1"])),
        _engine_name(before["foe"], before["names"]["foe"].get(choices["p2"])),
    )
    if None in moves:
        return "a choice the engine cannot name"
    try:
        converted = to_state(before)
        branches = [
            b for b in pe.generate_instructions(converted.state, *moves) if b.percentage > 0
        ]
        firsts = _first_movers(record, moves)
    except BaseException as err:  # noqa: BLE001 (a Rust panic is a BaseException)
        if isinstance(err, KeyboardInterrupt):
            raise
        return f"engine error: {type(err).__name__}"
    out: dict[str, list[tuple[bool, str]]] = collections.defaultdict(list)
    first = _showdown_first(record["log"])
    both_move = all(c.startswith("move") for c in choices.values())
    if both_move and first and firsts:
        out["order"].append((first in firsts, f"showdown {first}, engine {sorted(firsts)}"))
    out["damage"] = _damage(record, first)
    if record.get("pivot") or "after" not in record:
        return dict(out)
    slots = record["before_slots"]
    before_active = {"p1": slots[0][0], "p2": slots[1][0]}
    showdown = _facts(_showdown_outcome(record["after"], record["after_slots"]), before_active)
    engine = [
        _facts(_engine_outcome(converted.state.apply_instructions(b), slots), before_active)
        for b in branches
    ]
    known_items = all(names.knows_item(m["pokemon"][0]["item"]) or not m["pokemon"][0]["item"]
                      for m in (before["me"], before["foe"]))  # fmt: skip
    for mechanic in MECHANICS[2:]:
        if mechanic == "item" and not known_items:
            continue
        seen = [e[mechanic] for e in engine]
        agree = showdown[mechanic] in seen
        out[mechanic].append((agree, f"showdown {showdown[mechanic]}, engine {seen[:3]}"))
    return dict(out)


def measure(records: Iterator[dict], keep: int = 5) -> dict[str, Any]:
    """Agreement counts and rates per mechanic over ``records``, with up to ``keep``
    disagreements each (battle, turn, note) and why turns were skipped."""
    counts = {m: [0, 0] for m in MECHANICS}
    examples: dict[str, list] = {m: [] for m in MECHANICS}
    skipped: collections.Counter[str] = collections.Counter()
    states, battle_ids, dropped = 0, set(), collections.Counter()
    for record in records:
        result = compare(record)
        if isinstance(result, str):
            skipped[result] += 1
            continue
        states += 1
        battle_ids.add(record["battle"])
        dropped.update(set(to_state(record["before"]).dropped))
        if record.get("pivot"):
            skipped["mid-turn switch: order and damage only"] += 1
        for mechanic, checks in result.items():
            for agree, note in checks:
                counts[mechanic][0] += 1
                counts[mechanic][1] += agree
                if not agree and len(examples[mechanic]) < keep:
                    examples[mechanic].append([record["battle"], record["turn"], note])
    return {
        "states": states,
        "battles": len(battle_ids),
        "mechanics": {
            m: {"compared": n, "agree": a, "rate": round(a / n, 4) if n else None}
            for m, (n, a) in counts.items()
        },
        "skipped": dict(skipped),
        "dropped": dict(dropped.most_common(15)),
        "disagreements": examples,
    }
