"""World dumps (the exact Showdown state of worlds built from real battles,
tests/data/gen9randombattle-engine-dumps.json.gz) as poke-engine states: what the engine
reads back of them is what the simulator held, and every own choice maps to an engine
option."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import pytest

pe = pytest.importorskip("poke_engine", reason="poke-engine is not installed (make setup)")

from mapleenv.search.engine.state import to_state  # noqa: E402

DUMPS = Path(__file__).resolve().parents[2] / "data" / "gen9randombattle-engine-dumps.json.gz"
STATUS = {"": "NONE", "brn": "BURN", "par": "PARALYZE", "slp": "SLEEP", "frz": "FREEZE",
          "psn": "POISON", "tox": "TOXIC"}  # fmt: skip


def _decisions() -> list[dict]:
    with gzip.open(DUMPS, "rt") as f:
        return json.load(f)


def _worlds() -> list[dict]:
    return [w for d in _decisions() for w in d["worlds"]]


def _written(state) -> tuple[list[list[str]], list[list[str]]]:
    """The engine's own serialisation of both sides' Pokémon, field by field."""
    parts = state.to_string().split("/")
    sides = []
    for side in parts[:2]:
        mons = side.split("=")[:6]
        sides.append([m.split(",") for m in mons])
    return sides[0], sides[1]


def test_the_saved_dumps_cover_both_kinds_of_decision() -> None:
    decisions = _decisions()
    assert len(decisions) >= 20
    switch_ins = [
        d for d in decisions if all(c.startswith("switch") for c in d["choices"].values())
    ]
    assert 0 < len(switch_ins) < len(decisions)


def test_the_engine_reads_back_what_the_simulator_held() -> None:
    for world in _worlds():
        converted = to_state(world)
        assert converted.dropped == [], converted.dropped
        for side, written in zip(
            (world["me"], world["foe"]), _written(converted.state), strict=True
        ):
            for mon, fields in zip(side["pokemon"], written, strict=False):
                assert fields[0] == mon["species"].upper()
                assert int(fields[1]) == mon["level"]
                assert int(fields[6]) == (0 if mon["fainted"] else mon["hp"])
                assert int(fields[7]) == mon["maxhp"]
                stats = [int(v) for v in fields[13:18]]
                assert stats == [mon["stats"][s] for s in ("atk", "def", "spa", "spd", "spe")]
                assert fields[18] == STATUS[mon["status"]]
                moves = [m.split(";") for m in fields[22:26]]
                for move, (name, _disabled, pp) in zip(mon["moves"], moves, strict=False):
                    assert name == move["id"].upper() and int(pp) == move["pp"]
                assert fields[10] == (mon["item"].upper() or "NONE")


def test_every_own_choice_is_an_engine_root_option() -> None:
    for decision in _decisions():
        for world in decision["worlds"]:
            converted = to_state(world)
            result = pe.monte_carlo_tree_search(converted.state, 0, 1000, 1)
            options = {r.move_choice for r in result.side_one}
            names = [converted.names[c] for c in decision["choices"].values()]
            assert None not in names
            # the world's legal own choices (tera ones included) are the engine's options
            assert set(names) <= options, (set(names) - options, options)


def test_boosts_status_counters_volatiles_and_side_conditions_go_over() -> None:
    world = copy.deepcopy(next(w for w in _worlds() if not w["me"]["force_switch"]))
    me = world["me"]
    active = next(m for m in me["pokemon"] if m["active"])
    active["boosts"].update(atk=2, spe=-1)
    active["status"], active["status_time"], active["status_start"] = "slp", 1, 3
    active["volatiles"]["substitute"] = {"duration": None, "hp": 40}
    active["volatiles"]["taunt"] = {"duration": 2}
    me["conditions"] = {"spikes": {"layers": 2, "duration": None},
                        "reflect": {"layers": 1, "duration": 3}}  # fmt: skip
    world["field"].update(weather="raindance", weather_turns=4)
    state = to_state(world).state
    side = state.side_one
    assert (side.attack_boost, side.speed_boost) == (2, -1)
    assert side.substitute_health == 40 and {"substitute", "taunt"} <= side.volatile_statuses
    assert side.volatile_status_durations.taunt == 1  # the engine counts taunt's turns up
    assert (side.side_conditions.spikes, side.side_conditions.reflect) == (2, 3)
    mon = side.pokemon[int(side.active_index)]
    assert (mon.status, mon.sleep_turns, mon.rest_turns) == ("sleep", 2, 0)
    assert (state.weather, state.weather_turns_remaining) == ("rain", 4)
    written = state.to_string()
    assert "RAIN;4" in written and "SUBSTITUTE" in written


def test_what_the_engine_does_not_know_is_listed_as_dropped() -> None:
    world = copy.deepcopy(_worlds()[0])
    mon = world["foe"]["pokemon"][0]
    mon["moves"][0]["id"] = "notamove"
    mon["item"] = "notanitem"
    mon["volatiles"] = {"notavolatile": {"duration": 2}}
    world["field"]["pseudo"]["gravity"] = 3
    dropped = to_state(world).dropped
    assert {"move:notamove", "item:notanitem", "volatile:notavolatile", "field:gravity"} <= set(
        dropped
    )


@pytest.mark.parametrize(("volatile", "left", "count"),
                         [("yawn", 2, 0), ("yawn", 1, 1), ("taunt", 3, 0), ("taunt", 1, 2),
                          ("encore", 3, 0), ("encore", 1, 2)])  # fmt: skip
def test_counted_volatiles_go_over_as_the_engine_counts_them_and_it_searches(
    volatile: str, left: int, count: int
) -> None:
    """Showdown counts a volatile's turns left down; poke-engine counts them up and stops
    (a Rust panic) on a count it does not expect: Yawn at 2 did, in a real evaluation."""
    world = copy.deepcopy(next(w for w in _worlds() if not w["me"]["force_switch"]))
    for side in ("me", "foe"):
        active = next(m for m in world[side]["pokemon"] if m["active"])
        active["volatiles"][volatile] = {"duration": left, "move": active["moves"][0]["id"]}
    state = to_state(world).state
    assert getattr(state.side_two.volatile_status_durations, volatile) == count
    result = pe.monte_carlo_tree_search(state, 0, 2000, 1)
    assert result.total_visits >= 2000
