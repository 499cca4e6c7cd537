"""Unit tests of the direct backend's stream parsing (no Node, no server)."""

from __future__ import annotations

import json
import logging

import pytest
from poke_env.battle.battle import Battle
from poke_env.player.battle_order import DefaultBattleOrder, SingleBattleOrder

from mapleenv.backends.direct.protocol import absorb, player_view
from mapleenv.backends.direct.session import order_to_choice

# A hand-made simulator update: p1's switch has exact HP in its secret line (110/110)
# and a percentage in the public line, as the simulator writes it.
UPDATE = "\n".join(
    [
        "|t:|1700000000",
        "|player|p1|Alice||",
        "|player|p2|Bob||",
        "|teamsize|p1|2",
        "|teamsize|p2|2",
        "|gen|9",
        "|",
        "|start",
        "|split|p1",
        "|switch|p1a: Pikachu|Pikachu, L50, M|110/110",
        "|switch|p1a: Pikachu|Pikachu, L50, M|100/100",
        "|split|p2",
        "|switch|p2a: Eevee|Eevee, L50, F|120/120",
        "|switch|p2a: Eevee|Eevee, L50, F|100/100",
        "|turn|1",
    ]
)


def _request(side: str, name: str, active: str, bench: str, move: str) -> str:
    def mon(species: str, is_active: bool) -> dict:
        return {
            "ident": f"{side}: {species}",
            "details": f"{species}, L50",
            "condition": "110/110",
            "active": is_active,
            "stats": dict.fromkeys(("atk", "def", "spa", "spd", "spe"), 100),
            "moves": [move],
            "baseAbility": "static",
            "item": "",
            "pokeball": "pokeball",
            "ability": "static",
        }

    return json.dumps(
        {
            "active": [
                {
                    "moves": [
                        {
                            "move": move,
                            "id": move,
                            "pp": 24,
                            "maxpp": 24,
                            "target": "normal",
                            "disabled": False,
                        }
                    ]
                }
            ],
            "side": {"name": name, "id": side, "pokemon": [mon(active, True), mon(bench, False)]},
        }
    )


def _battles() -> dict[str, Battle]:
    log = logging.getLogger("test")
    return {
        "p1": Battle("battle-gen9randombattle-t", "Alice", log, gen=9),
        "p2": Battle("battle-gen9randombattle-t", "Bob", log, gen=9),
    }


def test_player_view_resolves_split_lines_per_side() -> None:
    p1 = player_view(UPDATE, "p1")
    p2 = player_view(UPDATE, "p2")
    assert "|switch|p1a: Pikachu|Pikachu, L50, M|110/110" in p1  # own secret line
    assert "|switch|p2a: Eevee|Eevee, L50, F|100/100" in p1  # foe's public line
    assert "|switch|p1a: Pikachu|Pikachu, L50, M|100/100" in p2
    assert "|switch|p2a: Eevee|Eevee, L50, F|120/120" in p2
    assert not any(line.startswith("|split|") for line in p1 + p2)
    assert "|" in p1 and "" not in p1  # the bare "|" line is kept, empty lines are not


def test_player_view_drops_empty_public_line() -> None:
    update = "|split|p1\n|-heal|p1a: X|50/100\n\n|turn|2"
    assert player_view(update, "p1") == ["|-heal|p1a: X|50/100", "|turn|2"]
    assert player_view(update, "p2") == ["|turn|2"]


def test_absorb_applies_requests_after_the_log_that_precedes_them() -> None:
    battles = _battles()
    # The request arrives before the update holding the |switch| it depends on.
    replies = [
        (
            "sideupdate",
            "p1\n|request|" + _request("p1", "Alice", "Pikachu", "Raichu", "thunderbolt"),
        ),
        ("sideupdate", "p2\n|request|" + _request("p2", "Bob", "Eevee", "Vaporeon", "tackle")),
        ("update", UPDATE),
    ]
    requested, errors = absorb(battles, replies)
    assert requested == ["p1", "p2"] and errors == []
    p1, p2 = battles["p1"], battles["p2"]
    assert p1.player_role == "p1" and p2.player_role == "p2"
    assert p1.active_pokemon.species == "pikachu"
    assert [m.id for m in p1.available_moves] == ["thunderbolt"]
    assert [m.species for m in p1.available_switches] == ["raichu"]
    assert p1.active_pokemon.max_hp == 110  # secret line: exact HP
    assert p2.opponent_active_pokemon.species == "pikachu"
    assert p2.opponent_active_pokemon.current_hp == 100  # public line: percent
    assert p1.turn == 1 and p2.turn == 1


class _CallOrderBattle(Battle):
    """A real poke-env Battle that also records the order of parse calls."""

    calls: list[str] = []

    def parse_message(self, split_message: list[str]) -> None:
        self.calls.append(split_message[1])
        super().parse_message(split_message)

    def parse_request(self, request: dict, strict_battle_tracking: bool = False) -> None:
        self.calls.append("request")
        super().parse_request(request, strict_battle_tracking)


def test_absorb_defers_requests_until_the_whole_reply_is_parsed() -> None:
    battle = _CallOrderBattle("battle-gen9randombattle-t", "Alice", logging.getLogger("t"), gen=9)
    battle.calls = []
    request = _request("p1", "Alice", "Pikachu", "Raichu", "thunderbolt")
    absorb({"p1": battle}, [("sideupdate", "p1\n|request|" + request), ("update", UPDATE)])
    assert battle.calls[-1] == "request"
    assert battle.calls.count("request") == 1 and "turn" in battle.calls


def test_absorb_reports_choice_errors_per_side() -> None:
    battles = _battles()
    absorb(battles, [("update", UPDATE)])
    _, errors = absorb(battles, [("sideupdate", "p2\n|error|[Invalid choice] Can't move")])
    assert errors == [("p2", "[Invalid choice] Can't move")]


def test_win_line_finishes_both_views() -> None:
    battles = _battles()
    absorb(battles, [("update", UPDATE + "\n|\n|win|Bob")])
    assert battles["p1"].finished and battles["p1"].won is False
    assert battles["p2"].won is True


@pytest.mark.parametrize(
    "order,choice",
    [
        ("/choose move thunderbolt terastallize", "move thunderbolt terastallize"),
        ("/choose switch Raichu", "switch Raichu"),
        ("/team 123456", "team 123456"),
        ("", "default"),
    ],
)
def test_order_to_choice_strips_the_chat_command(order: str, choice: str) -> None:
    assert order_to_choice(order) == choice


def test_order_to_choice_accepts_poke_env_orders() -> None:
    assert order_to_choice(DefaultBattleOrder()) == "default"
    assert order_to_choice(SingleBattleOrder("/choose move 1")) == "move 1"
