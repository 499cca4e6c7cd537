'use strict';
/**
 * Real gen9randombattle battles played inside the simulator (both teams known), for the
 * native engine's fidelity check (mapleenv/search/engine/fidelity.py): at sampled turns the
 * exact battle before the turn (dump.js), the pair of choices played, the state right before
 * each move action of the turn, the turn's log (the omniscient lines, exact HP) and the
 * battle after it. Both sides pick with a simple stochastic policy: mostly the strongest move
 * by base power x type effectiveness x STAB, sometimes a random legal choice or a switch.
 *
 *   node engine_turns.js [--seed N] [--battles N] [--every N] [--sim DIR]
 * prints one JSON record a line.
 */
const {loadSim} = require('../load_sim');
const {dumpBattle} = require('./dump');
const {legalChoices} = require('./game');

function args(argv) {
  const out = {seed: 1, battles: 10, every: 2, sim: undefined};
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (!(key in out) || argv[i + 1] === undefined) {
      process.stderr.write(`error: bad argument ${argv[i]} (--seed --battles --every --sim)\n`);
      process.exit(2);
    }
    out[key] = key === 'sim' ? argv[i + 1] : Number(argv[i + 1]);
  }
  return out;
}

/** A small seeded PRNG (mulberry32) for the players' picks. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function moveScore(battle, side, choice) {
  const active = side.active[0];
  const foe = side.foe.active[0];
  const slot = active.moveSlots[Number(choice.split(' ')[1]) - 1];
  const move = battle.dex.moves.get(slot.id);
  if (!foe || move.category === 'Status') return 0;
  if (!battle.dex.getImmunity(move.type, foe)) return 0;
  const stab = active.getTypes().includes(move.type) ? 1.5 : 1;
  return (move.basePower || 60) * stab * Math.pow(2, battle.dex.getEffectiveness(move.type, foe));
}

/** The side's pick: a switch (forced, or 10%), a random choice (25%), else the strongest move. */
function pick(battle, side, rand) {
  // a side that waits chooses nothing (Showdown would keep a choice made now for the next turn)
  if (!side.activeRequest || side.activeRequest.wait) return null;
  const choices = legalChoices(side);
  if (!choices.length) return null;
  const moves = choices.filter(c => c.startsWith('move') && !c.endsWith('terastallize'));
  const switches = choices.filter(c => c.startsWith('switch'));
  const r = rand();
  if (!moves.length || (switches.length && r < 0.1)) {
    return switches[Math.floor(rand() * switches.length)] || choices[0];
  }
  if (r < 0.35) return choices[Math.floor(rand() * choices.length)];
  let best = moves[0];
  for (const c of moves) if (moveScore(battle, side, c) > moveScore(battle, side, best)) best = c;
  const tera = `${best} terastallize`;
  return choices.includes(tera) && rand() < 0.15 ? tera : best;
}

/** Stable team indices (Showdown reorders `side.pokemon` on a switch). */
function slots(battle, teams) {
  return battle.sides.map((side, i) => side.pokemon.map(mon => teams[i].indexOf(mon)));
}

/** Choose for ``side``; a choice the request refuses is the simulator's default (a refused
 * choice can leave part of itself behind: cleared first, or it would be played later). */
function chooseOrDefault(battle, side, choice) {
  if (battle.choose(side.id, choice)) return true;
  side.clearChoice();
  battle.choose(side.id, 'default');
  return false;
}

/** Both sides pick for the requests as they stand, then choose: one side's choice can end
 * a request (a forced switch) and open the next turn's, which the other must not answer. */
function playTurn(battle, rand) {
  const picks = battle.sides.map(side => pick(battle, side, rand));
  battle.sides.forEach((side, i) => { if (picks[i]) chooseOrDefault(battle, side, picks[i]); });
}

function main() {
  const opts = args(process.argv.slice(2));
  const Sim = loadSim(opts.sim);
  const rand = prng(opts.seed);
  for (let b = 0; b < opts.battles; b++) {
    const seed = [opts.seed, b + 1, 7, 11];
    // the players' seeds make their random teams (without one Showdown draws a fresh seed)
    const battle = new Sim.Battle({formatid: 'gen9randombattle', seed,
      p1: {name: 'p1', team: null, seed: [opts.seed, b + 1, 13, 1]},
      p2: {name: 'p2', team: null, seed: [opts.seed, b + 1, 13, 2]}});
    const teams = battle.sides.map(side => side.pokemon.slice());
    let turn = 0;
    while (!battle.ended && battle.turn < 300) {
      const moving = battle.sides.every(s => s.activeRequest && !s.activeRequest.wait &&
        !s.activeRequest.forceSwitch);
      turn++;
      if (!moving || turn % opts.every !== 0) {
        playTurn(battle, rand);
        continue;
      }
      const before = dumpBattle(battle);
      const beforeSlots = slots(battle, teams);
      const choices = battle.sides.map(side => pick(battle, side, rand));
      const startTurn = battle.turn;
      const moves = [];
      const runAction = battle.runAction;
      battle.runAction = function (action) {
        if (action.choice === 'move' && action.pokemon && action.pokemon.isActive) {
          moves.push({side: action.pokemon.side.id, move: action.move.id,
            log_index: battle.log.length, dump: dumpBattle(battle)});
        }
        return runAction.call(this, action);
      };
      const logStart = battle.log.length;
      // a choice the request refuses (a trapping ability the request did not flag): the
      // turn is played with the simulator's default choice and not recorded
      const refused = choices.map((c, i) => !chooseOrDefault(battle, battle.sides[i], c));
      battle.runAction = runAction;
      if (refused.some(r => r)) continue;
      // a mid-turn switch (U-turn, Eject Button) leaves the turn unfinished: no upkeep yet
      const pivot = !battle.ended && !battle.log.slice(logStart).includes('|upkeep');
      const record = {battle: b, seed, turn: startTurn, choices: {p1: choices[0], p2: choices[1]},
        before, before_slots: beforeSlots, moves: moves.map(m => Object.assign(m,
          {log_index: m.log_index - logStart})),
        log: battle.log.slice(logStart), pivot, ended: battle.ended};
      if (!pivot) {
        record.after = dumpBattle(battle);
        record.after_slots = slots(battle, teams);
      }
      process.stdout.write(JSON.stringify(record) + '\n');
    }
  }
}

main();
