'use strict';
/**
 * The search itself: a one-turn simultaneous-move game per world. Every pair (own choice,
 * opponent choice) is played on a clone of the world (`Battle.fromJSON`) with its own
 * seed, the position after the turn scored by a hand evaluation, pass after pass (new
 * seeds) while the budget lasts. The worlds' matrices are solved together (regret
 * matching: one strategy of ours for all worlds, one opponent strategy per world, since the
 * opponent knows its own team) and each own choice gets its expected score against the
 * opponent model.
 */
const {rollout} = require('./rollout');

const STATUS_COST = {brn: 0.15, par: 0.15, psn: 0.1, tox: 0.2, slp: 0.25, frz: 0.3};
const HAZARD_COST = {stealthrock: 0.06, spikes: 0.04, toxicspikes: 0.04, stickyweb: 0.04};
const SCREEN_GAIN = {reflect: 0.08, lightscreen: 0.08, auroraveil: 0.12, tailwind: 0.06};

/** One side's material: Pokémon left (HP-weighted), status, active boosts, hazards. */
function sideScore(side) {
  let score = 0;
  let alive = 0;
  for (const mon of side.pokemon) {
    if (mon.fainted || mon.hp <= 0) continue;
    alive++;
    score += 0.5 + 0.5 * mon.hp / mon.maxhp;
    score -= STATUS_COST[mon.status] || 0;
  }
  const active = side.active[0];
  if (active && !active.fainted) {
    let boosts = 0;
    for (const stat of ['atk', 'def', 'spa', 'spd', 'spe']) boosts += active.boosts[stat];
    score += 0.05 * Math.max(-6, Math.min(6, boosts));
    if (active.volatiles.substitute) score += 0.1;
  }
  for (const id of Object.keys(side.sideConditions)) {
    const layers = side.sideConditions[id].layers || 1;
    score -= (HAZARD_COST[id] || 0) * layers * Math.max(0, alive - 1);
    score += SCREEN_GAIN[id] || 0;
  }
  return score;
}

/** The position for side `seat` (0: p1) in [-1, 1]: +-1 when the battle is over. */
function evaluate(battle, seat = 0) {
  const me = battle.sides[seat];
  const foe = battle.sides[1 - seat];
  if (battle.ended) return battle.winner === me.name ? 1 : battle.winner ? -1 : 0;
  const diff = sideScore(me) - sideScore(foe);
  return Math.max(-0.99, Math.min(0.99, diff / 6));
}

/** The choices a side's current request allows (moves, Tera moves, switches). */
function legalChoices(side) {
  const request = side.activeRequest;
  if (!request || request.wait) return [];
  const choices = [];
  if (request.forceSwitch) {
    side.pokemon.forEach((mon, i) => {
      if (i > 0 && !mon.fainted) choices.push(`switch ${i + 1}`);
    });
    return choices;
  }
  const active = request.active && request.active[0];
  if (!active) return choices;
  active.moves.forEach((move, i) => {
    if (move.disabled) return;
    choices.push(`move ${i + 1}`);
    if (active.canTerastallize) choices.push(`move ${i + 1} terastallize`);
  });
  if (!active.trapped) {
    side.pokemon.forEach((mon, i) => {
      if (i > 0 && !mon.fainted) choices.push(`switch ${i + 1}`);
    });
  }
  return choices;
}

/** Play one pair on a clone of `snapshot` (then `rolloutTurns` greedy turns,
 * rollout.js, with the world's damage `memo`); the hand score after that, or null when the
 * world refuses the own choice (a choice the real request allows but the world does not). */
function playPair(Sim, snapshot, own, foe, seed, rolloutTurns = 0, memo = undefined) {
  const battle = Sim.Battle.fromJSON(snapshot);
  battle.resetRNG(seed);
  if (!battle.choose('p1', own)) return null;
  if (foe && !battle.choose('p2', foe)) return null;
  if (rolloutTurns > 0) rollout(battle, rolloutTurns, memo);
  return evaluate(battle);
}

/** Regret matching on the worlds' matrices: our strategy (over rows), one opponent
 * strategy per world; returns the average strategies. */
function solve(matrices, iterations) {
  const rows = matrices[0].length;
  const ourRegret = new Float64Array(rows);
  const ourSum = new Float64Array(rows);
  const theirs = matrices.map(m => ({
    regret: new Float64Array(m[0].length), sum: new Float64Array(m[0].length)}));
  const normalize = (regret) => {
    let total = 0;
    const out = new Float64Array(regret.length);
    for (let i = 0; i < regret.length; i++) total += (out[i] = Math.max(0, regret[i]));
    for (let i = 0; i < out.length; i++) out[i] = total > 0 ? out[i] / total : 1 / out.length;
    return out;
  };
  for (let t = 0; t < iterations; t++) {
    const x = normalize(ourRegret);
    const ys = theirs.map(s => normalize(s.regret));
    const rowValue = new Float64Array(rows);
    matrices.forEach((m, w) => {
      const y = ys[w];
      const colValue = new Float64Array(y.length);
      let value = 0;
      for (let a = 0; a < rows; a++) {
        let v = 0;
        for (let b = 0; b < y.length; b++) {
          v += y[b] * m[a][b];
          colValue[b] += x[a] * m[a][b];
        }
        rowValue[a] += v / matrices.length;
        value += x[a] * v;
      }
      const s = theirs[w];
      for (let b = 0; b < y.length; b++) {
        s.regret[b] += value - colValue[b]; // the opponent minimises our score
        s.sum[b] += y[b];
      }
    });
    let expected = 0;
    for (let a = 0; a < rows; a++) expected += x[a] * rowValue[a];
    for (let a = 0; a < rows; a++) {
      ourRegret[a] += rowValue[a] - expected;
      ourSum[a] += x[a];
    }
  }
  const average = (sum) => {
    const total = sum.reduce((p, q) => p + q, 0);
    return Array.from(sum, v => (total > 0 ? v / total : 1 / sum.length));
  };
  return {ours: average(ourSum), theirs: theirs.map(s => average(s.sum))};
}

module.exports = {evaluate, legalChoices, playPair, solve};
