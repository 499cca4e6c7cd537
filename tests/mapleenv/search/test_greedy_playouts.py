"""Greedy rollouts (``mapleenv/js/search/rollout.js``) on real battles: every greedy choice
is one the simulator accepts, forced switches included, and playouts finish battles; the
opponent replies a search plays are legal and keep its best attack and status move."""

from __future__ import annotations

import pytest
from node_script import run_node_script

pytestmark = pytest.mark.integration

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
    out = run_node_script(PLAYOUTS, "rollout")
    assert out["battles"] == out["ended"] == 12, out
    assert out["refused"] == 0, out
    assert out["switches"] > 0  # forced switches after faints were chosen greedily
    assert out["choices"] > 12 * 20


REPLIES = """
const {loadSim} = require(%(load)s);
const {greedyChoice, likelyReplies} = require(%(rollout)s);
const {legalChoices} = require(%(game)s);
const Sim = loadSim(%(showdown)s);
const gen = Sim.Teams.getGenerator('gen9randombattle', [4, 3, 2, 1]);
const out = {states: 0, illegal: 0, wrongSize: 0, twoTera: 0, withStatus: 0, statusKept: 0,
  statusByDamage: 0, attackKept: 0, withAttack: 0};
const isStatus = (side, choice) => choice.startsWith('move') &&
  Sim.Dex.moves.get(side.active[0].moveSlots[Number(choice.split(' ')[1]) - 1].id)
    .category === 'Status';
for (let g = 0; g < 8; g++) {
  const battle = new Sim.Battle({formatid: 'gen9randombattle', seed: [g, 9, 9, 9],
    p1: {name: 'p1', team: gen.getTeam()}, p2: {name: 'p2', team: gen.getTeam()}});
  for (let step = 0; step < 1000 && !battle.ended; step++) {
    const side = battle.sides[1];
    const legal = legalChoices(side);
    if (legal.length > 3 && !side.activeRequest.forceSwitch) {
      const replies = likelyReplies(battle, side, legal, 3, new Map());
      const byDamage = likelyReplies(battle, side, legal, 3, new Map(), []);
      out.states++;
      if (replies.some(c => !legal.includes(c))) out.illegal++;
      if (replies.length !== 3) out.wrongSize++;
      if (replies.filter(c => c.endsWith('terastallize')).length > 1) out.twoTera++;
      if (legal.some(c => isStatus(side, c))) {
        out.withStatus++;
        if (replies.some(c => isStatus(side, c))) out.statusKept++;
        if (byDamage.some(c => isStatus(side, c))) out.statusByDamage++;
      }
      if (legal.some(c => c.startsWith('move') && !isStatus(side, c))) {
        out.withAttack++;
        if (replies.some(c => c.startsWith('move') && !isStatus(side, c))) out.attackKept++;
      }
    }
    for (const s of battle.sides) {
      const choice = greedyChoice(battle, s);
      if (choice === null || s.isChoiceDone() || battle.ended) continue;
      if (!battle.choose(s.id, choice)) battle.choose(s.id, 'default');
    }
  }
}
console.log(JSON.stringify(out));
"""


def test_the_replies_searched_keep_the_best_attack_and_status_move_of_legal_choices() -> None:
    out = run_node_script(REPLIES, "rollout", "game")
    assert out["states"] > 50, out
    assert out["illegal"] == out["wrongSize"] == out["twoTera"] == 0, out
    # every state with a usable status move searches one, and one attack where it has any
    assert out["statusKept"] == out["withStatus"] > 0, out
    assert out["attackKept"] == out["withAttack"] > 0, out
    # ranking by damage alone would have left the status move out of most of those states
    assert out["statusByDamage"] < out["withStatus"] / 2, out
