"""Switches are sent by request slot: a switch named by species meant a transformed active.

The simulator matches ``switch <name>`` against names and species, so with a Ditto
transformed into Pikachu active, ``switch Pikachu`` picked the Ditto ("You can't switch to
an active Pokémon", poke-env#880; seen ~once per 700k steps in the league run)."""

from __future__ import annotations

import pytest
from poke_env.battle.pokemon import Pokemon
from poke_env.player.battle_order import SingleBattleOrder

from mapleenv.backends.direct import DirectBattle, SimHost, order_to_choice

pytestmark = pytest.mark.integration

# packed teams (no validation in custom games): Imposter Ditto leads, a Pikachu behind it
AGENT_TEAM = "Ditto|||imposter|transform||||||50|]Pikachu|||static|thunderbolt,protect||||||50|"
OPPONENT_TEAM = "Pikachu|||static|thunderbolt,protect||||||50|"


def test_switching_out_a_transformed_ditto_to_the_species_it_copied() -> None:
    host = SimHost()
    try:
        session = DirectBattle(
            host,
            "switchslot-1",
            "gen9customgame",
            None,
            agent_team=AGENT_TEAM,
            opponent_team=OPPONENT_TEAM,
            seed=[1, 2, 3, 4],
        )
        session.start()
        battle = session.agent_battle
        assert battle.active_pokemon.species == "ditto"
        (pikachu,) = battle.available_switches
        order = SingleBattleOrder(pikachu)
        assert isinstance(order.order, Pokemon)
        assert order_to_choice(order, battle) == "switch 2"
        # by name, the simulator takes the active Ditto (now a Pikachu): refused
        refused = session.probe_choice("p1", order_to_choice(order)) or ""
        assert "can't switch to an active Pokémon" in refused
        session.choose({"p1": order, "p2": "move protect"})
        assert session.invalid_choices == {"p1": 0, "p2": 0}
        assert session.agent_battle.active_pokemon.species == "pikachu"
    finally:
        host.close()
