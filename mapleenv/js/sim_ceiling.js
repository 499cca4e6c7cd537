#!/usr/bin/env node
/**
 * Simulator ceiling: random-vs-random battles played in-process with the npm package's
 * BattleStream and RandomPlayerAI, back to back, for a fixed time; prints one JSON line.
 *
 *   node sim_ceiling.js [--seconds S] [--warmup W] [--format gen9randombattle]
 *   node sim_ceiling.js --serve [--format F]     then stdin lines `measure S [W]`
 *
 * With `--serve` the process stays up (its JIT stays warm) and answers each `measure`
 * line with one JSON line; it plays nothing between measurements.
 *
 * Turns are counted from the omniscient `|turn|N` lines (a turn started = a turn counted),
 * only inside the measured window that follows the warm-up; `battles` counts the battles
 * that ended inside it; `cpu_s` is the CPU time (all threads) the process used in it.
 * Run one process per core and add the results up (scripts/bench/bench_env.py does).
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
  const opts = {seconds: 10, warmup: 2, format: 'gen9randombattle', serve: false};
  for (let i = 0; i < argv.length; i += 2) {
    if (argv[i] === '--serve') {
      opts.serve = true;
      i -= 1;
      continue;
    }
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

/** RandomPlayerAI that makes no more choices once stopped (an abandoned battle stalls). */
class StoppablePlayer extends RandomPlayerAI {
  choose(choice) {
    if (!this.stopped) super.choose(choice);
  }
}

/**
 * Plays one battle; calls onTurn() for every `|turn|` line. Resolves true when the battle
 * ended, false when onTurn() returned false (the battle is then abandoned, stalled).
 */
async function playBattle(format, onTurn) {
  const stream = new Sim.BattleStream();
  const streams = Sim.getPlayerStreams(stream);
  const players = [new StoppablePlayer(streams.p1), new StoppablePlayer(streams.p2)];
  for (const player of players) void player.start();
  const done = (async () => {
    for await (const chunk of streams.omniscient) {
      let idx = chunk.indexOf('|turn|');
      while (idx >= 0) {
        if (!onTurn()) {
          for (const player of players) player.stopped = true;
          return false;
        }
        idx = chunk.indexOf('|turn|', idx + 6);
      }
    }
    return true;
  })();
  void streams.omniscient.write(`>start {"formatid":"${format}"}\n` +
    '>player p1 {"name":"Bot 1"}\n>player p2 {"name":"Bot 2"}');
  return done;
}

/**
 * Plays battles back to back: `warmup` seconds uncounted, then `seconds` counted. Phases
 * switch on the clock at any turn, not at battle ends, and the battle running when the
 * window closes is abandoned, so nothing keeps running after the measurement.
 */
async function measureWindow(format, warmup, seconds) {
  const warmEnd = Date.now() + warmup * 1000;
  let t0 = null;
  let cpu0 = null;
  let end = Infinity;
  let turns = 0;
  let battles = 0;
  let over = false;
  const onTurn = () => {
    if (t0 === null) {
      if (Date.now() < warmEnd) return true;
      t0 = process.hrtime.bigint();
      cpu0 = process.cpuUsage();
      end = Date.now() + seconds * 1000;
      return true;
    }
    if (Date.now() >= end) {
      over = true;
      return false;
    }
    turns++;
    return true;
  };
  while (!over) {
    const ended = await playBattle(format, onTurn);
    if (ended && t0 !== null && !over) battles++;
  }
  const elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  return {
    format, turns, battles, seconds: elapsed, turns_per_s: turns / elapsed,
    cpu_s: (cpu.user + cpu.system) / 1e6,
  };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (!opts.serve) {
    const result = await measureWindow(opts.format, opts.warmup, opts.seconds);
    process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(0));
    return;
  }
  const readline = require('readline');
  for await (const line of readline.createInterface({input: process.stdin})) {
    const [command, seconds, warmup] = line.trim().split(/\s+/);
    if (command !== 'measure' || !(Number(seconds) > 0)) {
      process.stdout.write(JSON.stringify({error: `bad command: ${line}`}) + '\n');
      continue;
    }
    const result = await measureWindow(opts.format, Number(warmup || 0), Number(seconds));
    process.stdout.write(JSON.stringify(result) + '\n');
  }
  process.exit(0);
}

main().catch(err => { console.error(err); process.exit(1); });
