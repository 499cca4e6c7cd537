"""Greedy rollouts (``mapleenv/js/search/rollout.js``) on real battles: every greedy choice
is one the simulator accepts, forced switches included, and playouts finish battles."""

from __future__ import annotations

import json
import subprocess

import pytest

from mapleenv.search.host import SEARCH_SCRIPT
from mapleenv.showdown import find_node, find_showdown

pytestmark = pytest.mark.integration

JS = SEARCH_SCRIPT.parent

PLAYOUTS = """
const {loadSim} = require(%(load)s);
const {greedyChoice} = require(%(rollout)s);
const Sim = loadSim(%(showdown)s);
const gen = Sim.Teams.getGenerator('gen9randombattle', [1, 2, 3, 4]);
const out = {battles: 0, ended: 0, choices: 0, refused: 0, switches: 0, turns: []};
for (let g = 0; g < 12; g++) {
  const battle = new Sim.Battle({formatid: 'gen9randombattle', seed: [g, 5, 6, 7],
    p1: {name: 'p1', team: gen.getTeam()}, p2: {name: 'p2', team: gen.getTeam()}});
  out.battles++;
  for (let step = 0; step < 1000 && !battle.ended; step++) {
    for (const side of battle.sides) {
      const choice = greedyChoice(battle, side);
      if (choice === null || side.isChoiceDone() || battle.ended) continue;
      out.choices++;
      if (choice.startsWith('switch')) out.switches++;
      if (!battle.choose(side.id, choice)) {
        out.refused++;
        battle.choose(side.id, 'default');
      }
    }
  }
  if (battle.ended) out.ended++;
  out.turns.push(battle.turn);
}
console.log(JSON.stringify(out));
"""


def test_greedy_playouts_choose_only_legal_actions_and_finish_battles() -> None:
    script = PLAYOUTS % {
        "load": json.dumps(str(JS / "load_sim.js")),
        "rollout": json.dumps(str(JS / "search" / "rollout.js")),
        "showdown": json.dumps(str(find_showdown())),
    }
    result = subprocess.run(
        [find_node(), "-e", script], capture_output=True, text=True, timeout=240, check=True
    )
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["battles"] == out["ended"] == 12, out
    assert out["refused"] == 0, out
    assert out["switches"] > 0  # forced switches after faints were chosen greedily
    assert out["choices"] > 12 * 20
