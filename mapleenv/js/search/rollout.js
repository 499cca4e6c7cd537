'use strict';
/**
 * Rollouts: play a cloned battle a few turns further with a fast greedy policy on both
 * sides, so a leaf is scored after the searched turn's consequences play out (a switch-in
 * attacks, a boost is used, a slower Pokémon moves), not right after it. The greedy policy
 * picks the move that does the most damage by one roll of the simulator's own damage formula
 * (abilities, items, weather, boosts, Tera included; no critical hit; the roll draws from the
 * clone's seeded PRNG), weighted by accuracy and mean hits, a status move only when nothing
 * damages, and on a forced switch the Pokémon whose best move hurts the foe most.
 *
 * A search plays hundreds of rollouts from one world, and the damage formula was a quarter
 * of their time, so the readings are memoised per world (a `Map` the caller keeps): one
 * reading per attacker, move, target, their Tera state and attacking/defending boosts,
 * weather and terrain. What else moves damage (HP-dependent power, a lost item, a changed
 * ability) keeps the first reading: the greedy policy is a rough player either way.
 */

/** The memo key of a damage reading (what the formula depends on most). */
function damageKey(battle, mon, target, id) {
  const b = mon.boosts;
  const t = target.boosts;
  return `${mon.side.id}${mon.species.id}${mon.terastallized || ''}${b.atk}${b.spa}|` +
    `${target.side.id}${target.species.id}${target.terastallized || ''}${t.def}${t.spd}|` +
    `${id}|${battle.field.weather}|${battle.field.terrain}`;
}

/** One reading of the damage formula: [damage times mean hits, accuracy]; [0, 0] when the
 * move cannot hurt `target`. */
function readDamage(battle, mon, target, id) {
  const move = battle.dex.getActiveMove(id);
  move.willCrit = false;
  let damage;
  try {
    damage = battle.actions.getDamage(mon, target, move, true);
  } catch (err) {
    return [0, 0];
  }
  if (typeof damage !== 'number' || !(damage > 0)) return [0, 0];
  const hits = Array.isArray(move.multihit) ? (move.multihit[0] + move.multihit[1]) / 2
    : (move.multihit || 1);
  return [damage * hits, move.accuracy === true ? 1 : move.accuracy / 100];
}

/** The damage of `mon`'s move `id` on `target` (one roll, times accuracy and mean hits,
 * capped at its HP): 0 when it cannot hurt it. `memo` (optional): the world's readings. */
function expectedDamage(battle, mon, target, id, memo) {
  if (!target || target.fainted || battle.dex.moves.get(id).category === 'Status') return 0;
  let reading;
  if (memo) {
    const key = damageKey(battle, mon, target, id);
    reading = memo.get(key);
    if (reading === undefined) memo.set(key, reading = readDamage(battle, mon, target, id));
  } else {
    reading = readDamage(battle, mon, target, id);
  }
  return Math.min(target.hp, reading[0]) * reading[1];
}

/** `expectedDamage` as a share of `target`'s max HP. */
function damageShare(battle, mon, target, id, memo) {
  return expectedDamage(battle, mon, target, id, memo) / Math.max(1, target ? target.maxhp : 1);
}

/** The most damage `mon` does to `target` with its usable moves, as a share of its max HP. */
function bestDamage(battle, mon, target, memo) {
  let best = 0;
  for (const slot of mon.moveSlots) {
    if (slot.pp > 0 && !slot.disabled) {
      best = Math.max(best, damageShare(battle, mon, target, slot.id, memo));
    }
  }
  return best;
}

/** The greedy choice of a side for its current request, or null when it has none. */
function greedyChoice(battle, side, memo) {
  const request = side.activeRequest;
  if (!request || request.wait) return null;
  const foe = side.foe.active[0];
  if (request.forceSwitch) {
    let best = null;
    let bestScore = -Infinity;
    side.pokemon.forEach((mon, i) => {
      if (i === 0 || mon.fainted) return;
      const score = bestDamage(battle, mon, foe, memo) + 0.5 * mon.hp / mon.maxhp;
      if (score > bestScore) [best, bestScore] = [i, score];
    });
    return best === null ? 'pass' : `switch ${best + 1}`;
  }
  const active = request.active && request.active[0];
  const mon = side.active[0];
  if (!active || !mon) return 'default';
  let best = null;
  let bestDamageDone = -1;
  active.moves.forEach((move, i) => {
    if (move.disabled) return;
    const damage = expectedDamage(battle, mon, foe, move.id, memo);
    if (damage > bestDamageDone) [best, bestDamageDone] = [i, damage];
  });
  return best === null ? 'default' : `move ${best + 1}`;
}

/** The kinds of reply whose best `likelyReplies` always keeps (scripts/search/search_replies.py
 * measured what the opponent really played against each rule: docs/results/search.md). */
const RESERVED = ['attack', 'status'];

/** The `limit` likeliest of `choices` (legal choice strings of `side`) by a greedy reading:
 * a move by the damage it does to the foe's active (its Tera form only for the best move), a
 * switch by how much more the incoming Pokémon hurts the foe than the foe hurts it. The best
 * of each `reserve` kind ('attack', 'status': setup, Protect, hazards, status; 'switch') comes
 * first, then the rest by the reading: damage alone ranks a status move last, and the shipped
 * agent chose one in about a quarter of its turns. */
function likelyReplies(battle, side, choices, limit, memo, reserve = RESERVED) {
  if (!limit || choices.length <= limit) return choices;
  const mon = side.active[0];
  const foe = side.foe.active[0];
  const scored = choices.map(choice => {
    const [kind, index] = choice.split(' ');
    if (kind === 'switch') {
      const incoming = side.pokemon[Number(index) - 1];
      const edge = bestDamage(battle, incoming, foe, memo) -
        bestDamage(battle, foe, incoming, memo);
      return [choice, edge, 'switch'];
    }
    const slot = mon && mon.moveSlots[Number(index) - 1];
    const score = slot ? damageShare(battle, mon, foe, slot.id, memo) : 0;
    const tera = choice.endsWith('terastallize');
    const status = slot && battle.dex.moves.get(slot.id).category === 'Status';
    return [choice, tera ? score - 1e-3 : score, status ? 'status' : 'attack'];
  });
  scored.sort((x, y) => y[1] - x[1]);
  const best = [];
  let tera = false;
  const take = ([choice]) => {
    if (best.includes(choice) || best.length >= limit) return;
    if (choice.endsWith('terastallize')) {
      if (tera) return;
      tera = true;
    }
    best.push(choice);
  };
  for (const kind of reserve) {
    const first = scored.find(entry => entry[2] === kind);
    if (first) take(first);
  }
  for (const entry of scored) take(entry);
  return best;
}

/** Play `turns` more turns (forced switches included) with the greedy policy on both
 * sides; a choice the simulator refuses falls back to its default. `memo`: as for
 * `expectedDamage`. */
function rollout(battle, turns, memo) {
  const last = battle.turn + turns;
  for (let step = 0; step < 4 * turns + 4 && !battle.ended && battle.turn < last; step++) {
    let chose = false;
    for (const side of battle.sides) {
      const choice = greedyChoice(battle, side, memo);
      if (choice === null || side.isChoiceDone()) continue;
      if (!battle.choose(side.id, choice)) battle.choose(side.id, 'default');
      chose = true;
      if (battle.ended) break;
    }
    if (!chose) break;
  }
  return battle;
}

module.exports = {bestDamage, expectedDamage, greedyChoice, likelyReplies, rollout};
