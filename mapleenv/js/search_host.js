#!/usr/bin/env node
/**
 * Maple's search host: decision-time search over the pinned simulator for one Python
 * process, over stdin/stdout (one JSON object a line each way).
 *
 *   node search_host.js [PATH_TO_pokemon-showdown]
 *
 * Requests (the search settings by the names of mapleenv/search/decide.py's SearchConfig,
 * which holds their defaults: a request that lacks one fails, naming it):
 *   {"id": 1, "cmd": "search", "view": {...}, "own": ["move 1", "switch 3", ...], "seed": S,
 *    "worlds": K, "sims": N | null, "time_ms": T | null, "rollout_turns": greedy turns past
 *    the searched one, "replies": the opponent's likeliest replies searched per world (0:
 *    all), "temperature": tau, "narrow_after": passes before only the policy's pick (the
 *    first own choice) and the best other choice go on, in new worlds (0 or no prior: never),
 *    "opponent": "greedy" | "policy", "uniform": the share of the opponent model spread over
 *    its replies ("prior_share" in its place with opponent "policy"), "prior_share",
 *    "solver_iterations": regret-matching passes, "prior": [log prior per own choice],
 *    "truth": [sets] | null, "foe_prior": [per world {choice: probability} | null] | null:
 *    the opponent model's (replies by it, the share of the model by it), "worlds_id": H |
 *    absent: play the worlds `foe_requests` built and named H (then dropped), not new ones}
 *     -> {"id": 1, "q": [score per own choice, null where no world allowed it or it was
 *         narrowed away],
 *         "ours": [our equilibrium strategy], "sims": n, "worlds": k, "ms": t,
 *         "build_ms": time spent building the worlds}
 *   {"id": 2, "cmd": "world", "view": {...}, "seed": S, "truth": [sets] | null, "replies": R,
 *    "foe_prior": [{choice: p}] | null, "foe_request": bool}
 *     -> {"id": 2, "state": {tracked fields of the built world}, "foe": [opponent's legal
 *         choices]; with R: "foe_names": [each as move:<id> / switch:<species>], "replies":
 *         [names of the R searched], "by_damage": [the R by damage alone], with foe_prior
 *         "by_prior": [the R likeliest by it]; with foe_request: "foe_request": the
 *         opponent's request}   (fidelity, opponent model)
 *   {"id": 5, "cmd": "foe_requests", "view": {...}, "seed": S, "worlds": K}
 *     -> {"id": 5, "requests": [the opponent's request in each of the K worlds a search
 *         with this view and seed builds], "worlds_id": H}   (search.opponent=policy: its
 *         model reads them; the search that names H plays these worlds, not rebuilt ones;
 *         the last KEPT_WORLDS handles are kept)
 *   {"id": 6, "cmd": "dump_worlds", "view": {...}, "seed": S, "worlds": K, "own": [choice
 *    strings] | null, "truth": [sets] | null, "worlds_id": H | absent}
 *     -> {"id": 6, "worlds": [each of the K worlds a search with this view and seed builds,
 *         as JSON (search/dump.js), "names" naming the own choices as the native engine
 *         does: its search reads them], "build_ms": t}
 *   {"id": 3, "cmd": "warm", "format": F} -> {"id": 3, "ms": t}: loads the format's data and
 *     set generator and plays a few turns, so the first decision's budget is not spent on it
 *   {"id": 4, "cmd": "ping"} -> {"id": 4, "ok": true}
 * A request that fails answers {"id": ..., "error": "one line"}; the host keeps serving.
 * Views come from mapleenv/search/view.py; docs/search.md explains the search.
 */
'use strict';
const {loadSim} = require('./load_sim');
const {legalChoices, playPair, solve} = require('./search/game');
const {likelyReplies} = require('./search/rollout');
const {buildWorld} = require('./search/state');
const {summarize} = require('./search/fields');
const {dumpBattle} = require('./search/dump');

const Sim = loadSim(process.argv[2]);
const generators = new Map();

/** Four 16-bit words from integers: the simulator's gen5 seed format. */
function seedOf(...parts) {
  let h = 0x811c9dc5;
  const words = [];
  for (let k = 0; k < 4; k++) {
    for (const part of parts.concat([k])) {
      h ^= (part >>> 0) & 0xffffffff;
      h = Math.imul(h, 0x01000193) >>> 0;
      h ^= h >>> 13;
    }
    words.push(h & 0xffff);
  }
  return words;
}

function generator(format, seed) {
  if (!generators.has(format)) generators.set(format, Sim.Teams.getGenerator(format, seed));
  const gen = generators.get(format);
  gen.prng = new Sim.PRNG(seed);
  return gen;
}

/** The `k`th world of a request: the same battle for the same view, seed and `k`. */
function worldBattle(req, k) {
  const gen = generator(req.view.format, seedOf(req.seed, k, 1));
  return buildWorld(Sim, gen, req.view, {seed: seedOf(req.seed, k, 2), truth: req.truth});
}

/** Worlds `foe_requests` built, by handle, for the search that names it (the opponent model
 * reads their requests in between), so that each is built once, not twice: the last
 * KEPT_WORLDS, each taken (and dropped) by the request that names it. */
const KEPT_WORLDS = 16;
const kept = new Map();
let nextWorldsId = 0;

function worldKey(req) {
  return JSON.stringify([req.seed, req.truth || null, req.view]);
}

/** Keep `battles`, built for `req`; their handle. */
function keepWorlds(req, battles) {
  const id = ++nextWorldsId;
  kept.set(id, {key: worldKey(req), battles});
  while (kept.size > KEPT_WORLDS) kept.delete(kept.keys().next().value);
  return id;
}

/** The worlds kept under the handle `req.worlds_id` names (dropped from the cache), or none
 * when it names none; an error for a handle not kept or kept for another view or seed. */
function takeWorlds(req) {
  if (req.worlds_id == null) return [];
  const built = kept.get(req.worlds_id);
  kept.delete(req.worlds_id);
  if (!built) {
    const why = `taken, or past the last ${KEPT_WORLDS} kept`;
    throw new Error(`worlds ${req.worlds_id} are not kept (${why})`);
  }
  if (built.key !== worldKey(req)) {
    throw new Error(`worlds ${req.worlds_id} were built for another view, seed or truth`);
  }
  return built.battles;
}

/** The SearchConfig fields (mapleenv/search/decide.py) each command reads: SearchConfig holds
 * their defaults, so a request without one is refused, not filled in here. */
const NEEDS = {
  search: ['view', 'own', 'seed', 'worlds', 'sims', 'time_ms', 'rollout_turns', 'replies',
    'temperature', 'narrow_after', 'opponent', 'uniform', 'prior_share', 'solver_iterations'],
  dump_worlds: ['view', 'own', 'seed', 'worlds'],
  foe_requests: ['view', 'seed', 'worlds'],
  world: ['view', 'seed'],
  warm: ['format'],
};

function checkFields(req) {
  const missing = (NEEDS[req.cmd] || []).filter(name => !(name in req));
  if (missing.length) {
    throw new Error(`${req.cmd} request lacks ${missing.join(', ')} (search settings come ` +
      'from SearchConfig: mapleenv.search.host_settings)');
  }
}

/** A reply the policy opponent model gives less than this is ranked by the greedy reading:
 * a confident network's small probabilities do not order the rest. */
const PRIOR_FLOOR = 0.02;

/** The opponent's replies searched in a world and their weights in its model. With `prior`
 * (the policy opponent model's probabilities by choice, when the request has them for this
 * world): the choices it gives at least PRIOR_FLOOR, likeliest first, then the greedy
 * reading's (rollout.js) up to `limit`, weighted by the prior. Else the greedy reading's
 * `limit`, weighted evenly. */
function replies(battle, legal, limit, memo, prior) {
  const greedy = likelyReplies(battle, battle.sides[1], legal, limit, memo);
  if (!prior) return {foe: greedy, weights: greedy.map(() => 1 / Math.max(1, greedy.length))};
  const p = c => Math.max(0, Number(prior[c]) || 0);
  const likely = legal.filter(c => p(c) >= PRIOR_FLOOR).sort((x, y) => p(y) - p(x));
  const foe = [];
  for (const c of likely.concat(greedy)) {
    if (!foe.includes(c) && (!limit || foe.length < limit)) foe.push(c);
  }
  const total = foe.reduce((sum, c) => sum + p(c), 0);
  return {foe, weights: foe.map(c => (total > 0 ? p(c) / total : 1 / foe.length))};
}

function makeWorld(req, k, built) {
  const battle = built || worldBattle(req, k);
  const memo = new Map(); // greedy damage readings, shared by the world's rollouts
  const prior = req.foe_prior && req.foe_prior[k];
  const {foe, weights} = replies(battle, legalChoices(battle.sides[1]), req.replies, memo, prior);
  return {
    memo,
    weights: foe.length ? weights : [1],
    snapshot: JSON.stringify(battle.toJSON()),
    foe: foe.length ? foe : [null],
    sum: req.own.map(() => new Float64Array(Math.max(1, foe.length))),
    count: req.own.map(() => new Uint32Array(Math.max(1, foe.length))),
    refused: new Set(),
  };
}

function search(req) {
  const start = process.hrtime.bigint();
  const elapsed = () => Number(process.hrtime.bigint() - start) / 1e6;
  const maxSims = req.sims == null ? Infinity : req.sims;
  const maxMs = req.time_ms == null ? Infinity : req.time_ms;
  const K = Math.max(1, req.worlds);
  const rolloutTurns = Math.max(0, Math.min(500, req.rollout_turns));
  const built = takeWorlds(req);
  if (!req.own.length) return {q: [], ours: [], sims: 0, worlds: 0, ms: elapsed()};
  const worlds = [];
  for (let k = 0; k < K && elapsed() < maxMs; k++) worlds.push(makeWorld(req, k, built[k]));
  let buildMs = elapsed();
  let sims = 0;
  const exhausted = () => sims >= maxSims || elapsed() >= maxMs;
  /** Own choice `a` against every reply of `world` (the `k`th drawn); false when the budget
   * ran out first. */
  const playRow = (world, k, a, pass) => {
    for (let b = 0; b < world.foe.length && !world.refused.has(a); b++) {
      if (exhausted()) return false;
      // common random numbers: every own choice meets reply b with the same seed, so
      // their scores differ by the choice more than by damage rolls and crits
      const value = playPair(Sim, world.snapshot, req.own[a], world.foe[b],
        seedOf(req.seed, pass, k, b, 3), rolloutTurns, world.memo);
      sims++;
      if (value === null) {
        world.refused.add(a);
        break;
      }
      world.sum[a][b] += value;
      world.count[a][b]++;
    }
    return true;
  };
  // Row by row (own choice, likeliest first) through every world, pass after pass: an
  // exhausted budget leaves whole rows, the policy's pick first among them.
  const narrowAfter = req.narrow_after > 0 && req.prior ? req.narrow_after : Infinity;
  let rows = req.own.map((c, a) => a);
  for (let pass = 0; pass < Math.min(1000, narrowAfter) && !exhausted() && worlds.length;
    pass++) {
    for (const a of rows) {
      for (let k = 0; k < worlds.length && !exhausted(); k++) playRow(worlds[k], k, a, pass);
    }
  }
  // Then only the two rows that can still win, each new world played once through by both:
  // the scores they are told apart by vary more between worlds than between passes.
  if (narrowAfter < Infinity && worlds.length === K && !exhausted()) {
    rows = narrow(req, worlds, rows);
    for (let k = K; k < K + 1000 && !exhausted(); k++) {
      const built = elapsed();
      const world = makeWorld(req, k);
      buildMs += elapsed() - built;
      // kept only when played through and allowing both rows (every world must score a row
      // for it to count), so the two rows' scores stay over the same worlds
      if (rows.every(a => playRow(world, k, a, 0)) && !rows.some(a => world.refused.has(a))) {
        worlds.push(world);
      }
    }
  }
  const reply = answer(req, worlds, sims, elapsed());
  reply.build_ms = buildMs;
  return reply;
}

/** The rows worth the rest of the budget (sequential halving down to two, as Gumbel MuZero
 * spends one): the policy's pick, row 0, and the other row with the best `log prior + q /
 * temperature` so far. The choice is between those two, and more worlds on both tell it
 * better than the budget spread over rows that cannot win. All rows when fewer than two
 * have a score yet. */
function narrow(req, worlds, rows) {
  if (!(req.temperature > 0) || rows.length <= 2) return rows;
  const {q} = answer(req, worlds, 0, 0);
  const scored = rows.filter(a => q[a] !== null);
  if (scored.length < 2 || q[0] === null) return rows;
  let best = null;
  for (const a of scored) {
    if (a === 0) continue;
    const score = req.prior[a] + q[a] / req.temperature;
    if (best === null || score > best[1]) best = [a, score];
  }
  return [0, best[0]];
}

/** Scores of the own choices every world played through against every reply. */
function answer(req, worlds, sims, ms) {
  const rows = req.own.map((c, a) => a).filter(a => worlds.length && worlds.every(
    w => !w.refused.has(a) && w.count[a].every(n => n > 0)));
  if (!worlds.length || !rows.length) return {q: req.own.map(() => null), sims, worlds: 0, ms};
  const matrices = worlds.map(w => rows.map(a => Array.from(w.sum[a], (s, b) => s / w.count[a][b])));
  const {ours, theirs} = solve(matrices, req.solver_iterations);
  const share = req.opponent === 'policy' ? req.prior_share : req.uniform;
  const u = Math.max(0, Math.min(1, share));
  const q = req.own.map(() => null);
  rows.forEach((a, i) => {
    let total = 0;
    matrices.forEach((m, w) => {
      const y = theirs[w];
      const model = worlds[w].weights;
      for (let b = 0; b < y.length; b++) total += ((1 - u) * y[b] + u * model[b]) * m[i][b];
    });
    q[a] = total / matrices.length;
  });
  const strategy = req.own.map(() => 0);
  rows.forEach((a, i) => { strategy[a] = ours[i]; });
  return {q, ours: strategy, sims, worlds: worlds.length, ms};
}

/** Load a format's data and generator, and run its code paths once (the JIT warms up). */
function warm(format) {
  const start = Date.now();
  const gen = generator(format, seedOf(0, 0, 1));
  const team = () => gen.getTeam();
  for (let i = 0; i < 3; i++) {
    const battle = new Sim.Battle({formatid: format, seed: seedOf(i, 0, 4),
      p1: {name: 'p1', team: team()}, p2: {name: 'p2', team: team()}});
    const snapshot = JSON.stringify(battle.toJSON());
    for (let t = 0; t < 20; t++) {
      playPair(Sim, snapshot, 'default', 'default', seedOf(i, t, 5), t % 2 ? 3 : 0);
    }
  }
  return {ms: Date.now() - start};
}

/** The K worlds of a request, each as plain JSON (search.engine=poke-engine). */
function dumpWorlds(req) {
  const start = process.hrtime.bigint();
  const built = takeWorlds(req);
  const worlds = [];
  for (let k = 0; k < Math.max(1, req.worlds); k++) {
    worlds.push(dumpBattle(built[k] || worldBattle(req, k), req.own));
  }
  return {worlds, build_ms: Number(process.hrtime.bigint() - start) / 1e6};
}

/** What a choice string of `side` names: `move:<id>` or `switch:<species id>`. */
function choiceName(side, choice) {
  const [kind, index] = choice.split(' ');
  if (kind === 'switch') return `switch:${side.pokemon[Number(index) - 1].species.id}`;
  const slot = side.active[0] && side.active[0].moveSlots[Number(index) - 1];
  return `move:${slot ? slot.id : '?'}`;
}

function handle(req) {
  checkFields(req);
  if (req.cmd === 'ping') return {ok: true};
  if (req.cmd === 'warm') return warm(req.format);
  if (req.cmd === 'search') return search(req);
  if (req.cmd === 'dump_worlds') return dumpWorlds(req);
  if (req.cmd === 'foe_requests') { // the opponent's request in each world, for its model
    const battles = [];
    for (let k = 0; k < Math.max(1, req.worlds); k++) battles.push(worldBattle(req, k));
    return {requests: battles.map(battle => battle.sides[1].activeRequest),
      worlds_id: keepWorlds(req, battles)};
  }
  if (req.cmd === 'world') {
    const battle = worldBattle(req, 0);
    const foe = legalChoices(battle.sides[1]);
    const reply = {state: summarize(battle), foe};
    if (req.foe_request) reply.foe_request = battle.sides[1].activeRequest;
    if (req.replies) { // scripts/search/search_replies.py; fidelity checks need none
      const memo = new Map();
      const named = choices => choices.map(c => choiceName(battle.sides[1], c));
      Object.assign(reply, {foe_names: named(foe),
        replies: named(likelyReplies(battle, battle.sides[1], foe, req.replies, memo)),
        by_damage: named(likelyReplies(battle, battle.sides[1], foe, req.replies, memo, []))});
      if (req.foe_prior) { // the policy opponent model's replies
        reply.by_prior = named(replies(battle, foe, req.replies, memo, req.foe_prior[0]).foe);
      }
    }
    return reply;
  }
  throw new Error(`unknown command ${JSON.stringify(req.cmd)}`);
}

let pending = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', chunk => {
  pending += chunk;
  let newline;
  while ((newline = pending.indexOf('\n')) >= 0) {
    const line = pending.slice(0, newline);
    pending = pending.slice(newline + 1);
    if (!line.trim()) continue;
    let reply;
    let id = null;
    try {
      const req = JSON.parse(line);
      id = req.id;
      reply = Object.assign({id}, handle(req));
    } catch (err) {
      reply = {id, error: String(err && err.message || err).split('\n')[0].slice(0, 300)};
    }
    process.stdout.write(JSON.stringify(reply) + '\n');
  }
});
process.stdin.on('end', () => process.exit(0));
process.stdout.on('error', () => process.exit(0));
