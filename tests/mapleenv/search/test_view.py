"""The search's view of a battle (``mapleenv/search/view.py``) from poke-env's own state."""

from __future__ import annotations

import pytest
from conftest import synthetic_battle

from mapleenv.search.view import battle_view

pytestmark = pytest.mark.unit

GYARADOS = ["switch", "p2a: Gyarados", "Gyarados, L80", "100/100"]


def test_faints_are_counted_as_the_simulator_counts_them() -> None:
    """Each side's ``faints`` is its ``|faint|`` messages: a Pokémon revived by Revival
    Blessing and fainted again counts twice (the simulator's totalFainted, which Last
    Respects reads), whatever is fainted now."""
    battle = synthetic_battle(
        [("Pikachu", 80, "100/100", ["thunderbolt"]), ("Raichu", 80, "0 fnt", ["thunderbolt"])],
        opponent_messages=[GYARADOS],
    )
    assert (battle_view(battle)["me"]["faints"], battle_view(battle)["foe"]["faints"]) == (0, 0)
    for message in (
        ["faint", "p1a: Raichu"],
        ["-heal", "p1: Raichu", "50/100", "[from] move: Revival Blessing"],
        ["faint", "p1a: Raichu"],
        ["faint", "p2a: Gyarados"],
    ):
        battle.parse_message(["", *message])
    view = battle_view(battle)
    assert (view["me"]["faints"], view["foe"]["faints"]) == (2, 1)


def _foe_active(view: dict) -> dict:
    return next(mon for mon in view["foe"]["pokemon"] if mon["active"])


def test_the_opponents_moves_since_it_switched_in_name_its_locks() -> None:
    """One move chosen since the opponent switched in is the move a choice item locks (and
    Encore); two different ones say it holds no choice item. Moves called by another move
    or an ability and moves before its last switch-in do not count."""
    battle = synthetic_battle(
        [("Pikachu", 80, "100/100", ["thunderbolt"])], opponent_messages=[GYARADOS]
    )
    assert "choice_move" not in _foe_active(battle_view(battle))  # no move yet
    for message in (
        ["move", "p2a: Gyarados", "Waterfall", "p1a: Pikachu"],
        ["move", "p1a: Pikachu", "Thunderbolt", "p2a: Gyarados"],
        ["move", "p2a: Gyarados", "Waterfall", "p1a: Pikachu"],
        ["move", "p2a: Gyarados", "Stealth Rock", "p1a: Pikachu", "[from]ability: Magic Bounce"],
    ):
        battle.parse_message(["", *message])
    foe = _foe_active(battle_view(battle))
    assert (foe["choice_move"], foe["last_move"], "not_choice" in foe) == (
        "waterfall",
        "waterfall",
        False,
    )
    battle.parse_message(["", "move", "p2a: Gyarados", "Dragon Dance", "p2a: Gyarados"])
    foe = _foe_active(battle_view(battle))
    assert ("choice_move" in foe, foe["last_move"], foe["not_choice"]) == (
        False,
        "dragondance",
        True,
    )
    battle.parse_message(["", "switch", "p2a: Gyarados", "Gyarados, L80", "100/100"])
    foe = _foe_active(battle_view(battle))
    assert not {"choice_move", "last_move", "not_choice"} & set(foe)


def test_a_recharge_turn_is_over_once_the_pokemon_could_not_move_for_it() -> None:
    """After Hyper Beam the opponent must recharge; after its ``cant ... recharge`` turn it
    acts again (poke-env keeps its own flag up until the Pokémon next moves)."""
    battle = synthetic_battle(
        [("Pikachu", 80, "100/100", ["thunderbolt"])], opponent_messages=[GYARADOS]
    )
    battle.parse_message(["", "move", "p2a: Gyarados", "Hyper Beam", "p1a: Pikachu"])
    battle.parse_message(["", "-mustrecharge", "p2a: Gyarados"])
    assert _foe_active(battle_view(battle))["must_recharge"] is True
    battle.parse_message(["", "cant", "p2a: Gyarados", "recharge"])
    assert _foe_active(battle_view(battle))["must_recharge"] is False


def test_a_rampage_locks_the_opponent_until_it_ends_in_fatigue() -> None:
    """Outrage chosen last turn, or carried on (``[from] lockedmove``) since, locks the
    opponent this turn; the turn it ends (confused by fatigue) or passes without it, not."""
    battle = synthetic_battle(
        [("Pikachu", 80, "100/100", ["thunderbolt"])], opponent_messages=[GYARADOS]
    )
    outrage = ["move", "p2a: Gyarados", "Outrage", "p1a: Pikachu"]
    steps = [
        ([["turn", "1"]], None),
        ([outrage, ["turn", "2"]], {"move": "outrage", "uses": 1}),
        ([[*outrage, "[from]lockedmove"], ["turn", "3"]], {"move": "outrage", "uses": 2}),
        (
            [[*outrage, "[from]lockedmove"], ["-start", "p2a: Gyarados", "confusion", "[fatigue]"]]
            + [["turn", "4"]],
            None,
        ),
        ([outrage, ["turn", "5"]], {"move": "outrage", "uses": 1}),
        ([["turn", "6"]], None),  # a turn without it: stopped (it fell asleep, say)
    ]
    for messages, rampage in steps:
        for message in messages:
            battle.parse_message(["", *message])
        assert _foe_active(battle_view(battle)).get("rampage") == rampage, messages


def test_the_seats_forme_changed_in_battle_is_read_from_the_log() -> None:
    """Hunger Switch turns Morpeko Hangry and back each turn; its requests name the base
    forme, so the view reads the forme from the last ``-formechange`` since it came in."""
    battle = synthetic_battle([("Morpeko", 88, "100/100", ["aurawheel"])])
    own = battle_view(battle)["me"]["pokemon"][0]
    assert own["forme"] is None
    change = ["-formechange", "p1a: Morpeko", "Morpeko-Hangry", "", "[from] ability: Hunger Switch"]
    battle.parse_message(["", *change])
    assert battle_view(battle)["me"]["pokemon"][0]["forme"] == "morpekohangry"
    battle.parse_message(["", "switch", "p1a: Morpeko", "Morpeko, L88", "100/100"])
    assert battle_view(battle)["me"]["pokemon"][0]["forme"] is None
