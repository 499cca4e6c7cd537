"""The opponent's seat rebuilt from the searching seat's log and a world's request (no
process): poke-env reads it as the opponent's own battle, under the log's names."""

from __future__ import annotations

import pytest

from mapleenv.actions import legal_actions
from mapleenv.search.mirror import foe_battle
from mapleenv.search.opponent_model import choice_string

pytestmark = pytest.mark.unit

LOG = [
    ["", "player", "p1", "Maple", "1", ""],
    ["", "player", "p2", "Rival", "2", ""],
    ["", "teamsize", "p1", "6"],
    ["", "teamsize", "p2", "6"],
    ["", "gen", "9"],
    ["", "start"],
    ["", "switch", "p1a: Garchomp", "Garchomp, L77, M", "200/250"],
    ["", "switch", "p2a: Urshifu", "Urshifu-Rapid-Strike, L75, F", "100/100"],
    ["", "turn", "1"],
    ["", "move", "p1a: Garchomp", "Earthquake", "p2a: Urshifu"],
    ["", "-damage", "p2a: Urshifu", "40/100"],
    ["", "move", "p2a: Urshifu", "Surging Strikes", "p1a: Garchomp"],
    ["", "-damage", "p1a: Garchomp", "120/250"],
    ["", "turn", "2"],
]

STATS = {"atk": 250, "def": 200, "spa": 150, "spd": 180, "spe": 200}


def _mon(ident: str, details: str, condition: str, moves: list[str], active: bool) -> dict:
    return {
        "ident": ident,
        "details": details,
        "condition": condition,
        "active": active,
        "stats": STATS,
        "moves": moves,
        "baseAbility": "unseenfist",
        "ability": "unseenfist",
        "item": "choiceband",
        "pokeball": "pokeball",
        "teraType": "Water",
        "terastallized": "",
    }


# the world's request for its seat p2, its Pokémon named after their species
MOVES = ["surgingstrikes", "closecombat", "uturn", "aquajet"]
REQUEST = {
    "active": [
        {
            "moves": [
                {"move": m, "id": m, "pp": 8, "maxpp": 8, "target": "normal", "disabled": False}
                for m in MOVES
            ],
            "canTerastallize": "Water",
        }
    ],
    "side": {
        "name": "p2",
        "id": "p2",
        "pokemon": [
            _mon(
                "p2: Urshifu-Rapid-Strike", "Urshifu-Rapid-Strike, L75, F", "110/275", MOVES, True
            ),
            _mon("p2: Pelipper", "Pelipper, L86, M", "250/250", ["hurricane", "roost"], False),
        ],
    },
    "rqid": 3,
}


def test_the_opponents_seat_reads_the_log_under_its_names_and_the_worlds_team() -> None:
    mirror = foe_battle(LOG, "p2", REQUEST, gen=9)
    assert mirror.player_role == "p2"
    # the world's Urshifu-Rapid-Strike is the log's Urshifu, not a seventh Pokémon
    assert sorted(mirror.team) == ["p2: Pelipper", "p2: Urshifu"]
    assert mirror.active_pokemon.species == "urshifurapidstrike"
    assert mirror.active_pokemon.current_hp == 110  # the world's exact HP
    assert mirror.opponent_active_pokemon.species == "garchomp"
    assert mirror.opponent_active_pokemon.current_hp_fraction == pytest.approx(120 / 250)
    assert "earthquake" in mirror.opponent_active_pokemon.moves
    assert [m.id for m in mirror.available_moves] == MOVES


def test_each_legal_order_is_named_as_the_search_host_names_choices() -> None:
    mirror = foe_battle(LOG, "p2", REQUEST, gen=9)
    names = {choice_string(order, mirror) for order in legal_actions(mirror).values()}
    moves = {f"move {i}" for i in range(1, 5)}
    assert names == moves | {f"{m} terastallize" for m in moves} | {"switch 2"}


def test_the_seat_can_be_p1() -> None:
    swapped = [
        [part.replace("p1", "px").replace("p2", "p1").replace("px", "p2") for part in m]
        for m in LOG
    ]
    mirror = foe_battle(swapped, "p1", REQUEST, gen=9)
    assert mirror.player_role == "p1"
    assert sorted(mirror.team) == ["p1: Pelipper", "p1: Urshifu"]
    assert mirror.opponent_active_pokemon.species == "garchomp"
