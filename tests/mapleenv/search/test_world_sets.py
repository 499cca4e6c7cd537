"""Opponent sets in worlds (``mapleenv/js/search/world.js``) drawn from the format's real
random-battle generator and pruned by what the seat saw."""

from __future__ import annotations

import pytest
from node_script import run_node_script

pytestmark = pytest.mark.integration

CHOICE_ITEMS = """
const {loadSim} = require(%(load)s);
const {opponentSets} = require(%(world)s);
const Sim = loadSim(%(showdown)s);
const dex = Sim.Dex.forFormat('gen9randombattle');
const gen = Sim.Teams.getGenerator('gen9randombattle', [1, 2, 3, 4]);
const species = Object.keys(gen.randomSets).slice(0, 150);
const out = {species: species.length, choice: {false: 0, true: 0}};
for (const notChoice of [false, true]) {
  for (const id of species) {
    const known = {species: id, level: 80, moves: [], item: null, ability: null,
      tera_type: null, not_choice: notChoice};
    const [set] = opponentSets(gen, dex, {pokemon: [known], team_size: 1}, null, 12);
    if (toID(set.item).startsWith('choice')) out.choice[notChoice]++;
  }
}
function toID(text) { return String(text || '').toLowerCase().replace(/[^a-z0-9]+/g, ''); }
console.log(JSON.stringify(out));
"""


def test_an_opponent_that_chose_two_moves_since_switching_in_gets_no_choice_item() -> None:
    """A choice item locks its holder into one move until it switches out: after two
    different moves (the view's ``not_choice``) the world's set carries another item."""
    out = run_node_script(CHOICE_ITEMS, "world", timeout=120)
    assert out["choice"]["false"] >= 10, out  # the generator hands out choice items
    assert out["choice"]["true"] == 0, out
