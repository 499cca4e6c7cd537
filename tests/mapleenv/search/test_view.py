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
