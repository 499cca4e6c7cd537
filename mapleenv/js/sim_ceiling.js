#!/usr/bin/env node
/**
 * Simulator ceiling: random-vs-random battles played in-process with the npm package's
 * BattleStream and RandomPlayerAI, back to back, for a fixed time; prints one JSON line.
 *
 *   node sim_ceiling.js [--seconds S] [--warmup W] [--format gen9randombattle]
 *
 * Turns are counted from the omniscient `|turn|N` lines (a turn started = a turn counted),
 * only inside the measured window that follows the warm-up; `battles` counts the battles
 * that ended inside it.
 * Run one process per core and add the results up (scripts/bench_env.py does).
 */
'use strict';
const path = require('path');

function loadSim() {
  const roots = [process.cwd(), path.resolve(__dirname, '..', '..'), __dirname];
  for (const root of roots) {
    try {
      return require(require.resolve('pokemon-showdown', {paths: [root]}));
    } catch (e) { /* try the next root */ }
  }
  console.error('error: npm package pokemon-showdown not found; run `make setup` (scripts/setup.sh)');
  process.exit(2);
}

function parseArgs(argv) {
  const opts = {seconds: 10, warmup: 2, format: 'gen9randombattle'};
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (!(key in opts) || argv[i + 1] === undefined) {
      console.error(`error: bad argument ${argv[i]} (use --seconds S --warmup W --format F)`);
      process.exit(2);
    }
    opts[key] = key === 'format' ? argv[i + 1] : Number(argv[i + 1]);
  }
  return opts;
}

const Sim = loadSim();
const {RandomPlayerAI} = require(path.join(
  path.dirname(require.resolve('pokemon-showdown', {paths: [process.cwd(), path.resolve(__dirname, '..', '..')]})),
  'tools', 'random-player-ai.js'));

/** Plays one battle; calls onTurn() for every `|turn|` line; resolves when it ends. */
async function playBattle(format, onTurn) {
  const stream = new Sim.BattleStream();
  const streams = Sim.getPlayerStreams(stream);
  const p1 = new RandomPlayerAI(streams.p1);
  const p2 = new RandomPlayerAI(streams.p2);
  void p1.start();
  void p2.start();
  const done = (async () => {
    for await (const chunk of streams.omniscient) {
      let idx = chunk.indexOf('|turn|');
      while (idx >= 0) {
        onTurn();
        idx = chunk.indexOf('|turn|', idx + 6);
      }
    }
  })();
  void streams.omniscient.write(`>start {"formatid":"${format}"}\n` +
    '>player p1 {"name":"Bot 1"}\n>player p2 {"name":"Bot 2"}');
  await done;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const warmEnd = Date.now() + opts.warmup * 1000;
  let t0 = null;
  let end = Infinity;
  let turns = 0;
  let battles = 0;
  const finish = () => {
    const elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
    process.stdout.write(JSON.stringify({
      format: opts.format, turns, battles, seconds: elapsed, turns_per_s: turns / elapsed,
    }) + '\n', () => process.exit(0));
  };
  // Phases switch on the clock at any turn, not at battle ends: warm-up turns are not
  // counted, and the run stops as soon as the measured window is over.
  const onTurn = () => {
    if (t0 === null) {
      if (Date.now() < warmEnd) return;
      t0 = process.hrtime.bigint();
      end = Date.now() + opts.seconds * 1000;
      return;
    }
    if (Date.now() >= end) {
      finish();
      throw new Error('done');
    }
    turns++;
  };
  for (;;) {
    try {
      await playBattle(opts.format, onTurn);
    } catch (err) {
      if (err.message === 'done') return new Promise(() => {});
      throw err;
    }
    if (t0 !== null) battles++;
  }
}

main().catch(err => { console.error(err); process.exit(1); });
