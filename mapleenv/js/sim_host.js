#!/usr/bin/env node
/**
 * Maple's simulator host: runs Pokémon Showdown battles in-process (the npm package's
 * BattleStream) for one Python process, over stdin/stdout.
 *
 *   node sim_host.js [PATH_TO_pokemon-showdown]
 *
 * Input, one line each:  `<battle id> <stream-protocol line>`, e.g.
 *   `7 >start {"formatid":"gen9randombattle","seed":[1,2,3,4]}`
 *   `7 >player p1 {"name":"Maple"}`   `7 >p1 move 1`   `7 >p2 switch 3`
 * and `<battle id> destroy` to drop a battle. Lines are handled in order, synchronously.
 *
 * Output: frames separated by a blank line (simulator messages never contain "\n\n"):
 *   `<battle id>\n<simulator message>\n\n` for every message the simulator emits
 *   (`update\n...`, `sideupdate\npN\n...`, `end\n{winner,turns,seed}`), then
 *   `<battle id>\nack\n\n` once the line that produced them has been handled, so the reader
 *   knows the reply to each line is complete. Errors in a line are reported as
 *   `<battle id>\nhosterror\n<message>\n\n` (followed by the ack).
 * The host exits when stdin closes (its parent died or closed it).
 */
'use strict';
const path = require('path');

function loadSim(explicitDir) {
  const candidates = [];
  if (explicitDir) candidates.push(path.resolve(explicitDir));
  for (const root of [process.cwd(), path.resolve(__dirname, '..', '..')]) {
    try {
      candidates.push(path.dirname(path.dirname(path.dirname(
        require.resolve('pokemon-showdown', {paths: [root]})))));
    } catch (e) { /* not under this root */ }
  }
  for (const dir of candidates) {
    try {
      return require(path.join(dir, 'dist', 'sim'));
    } catch (e) { /* try the next one */ }
  }
  process.stderr.write('error: npm package pokemon-showdown not found ' +
    `(looked in ${candidates.join(', ') || 'node_modules'}); run scripts/setup.sh\n`);
  process.exit(3);
}

const Sim = loadSim(process.argv[2]);

let out = [];

/** A BattleStream whose output goes straight (synchronously) into the output buffer. */
class HostedBattle extends Sim.BattleStream {
  constructor(id) {
    super({keepAlive: true});
    this.id = id;
  }
  pushMessage(type, data) {
    if (type === 'end') {
      const log = JSON.parse(data);
      data = JSON.stringify({winner: log.winner, turns: log.turns, seed: log.seed});
    }
    out.push(`${this.id}\n${type}\n${data}\n\n`);
  }
  pushError(err) {
    out.push(`${this.id}\nhosterror\n${String(err && err.stack || err).replace(/\n+/g, '\n')}\n\n`);
  }
}

const battles = new Map();

function handleLine(line) {
  const space = line.indexOf(' ');
  if (space <= 0) return;
  const id = line.slice(0, space);
  const command = line.slice(space + 1);
  try {
    if (command === 'destroy') {
      const battle = battles.get(id);
      if (battle && battle.battle) battle.battle.destroy();
      battles.delete(id);
    } else {
      let battle = battles.get(id);
      if (!battle) {
        battle = new HostedBattle(id);
        battles.set(id, battle);
      }
      battle.write(command);
    }
  } catch (err) {
    out.push(`${id}\nhosterror\n${String(err && err.stack || err).replace(/\n+/g, '\n')}\n\n`);
  }
  out.push(`${id}\nack\n\n`);
}

let pending = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', chunk => {
  pending += chunk;
  let newline = pending.indexOf('\n');
  if (newline < 0) return;
  let start = 0;
  while (newline >= 0) {
    handleLine(pending.slice(start, newline));
    start = newline + 1;
    newline = pending.indexOf('\n', start);
  }
  pending = pending.slice(start);
  if (out.length) {
    process.stdout.write(out.join(''));
    out = [];
  }
});
process.stdin.on('end', () => process.exit(0));
process.stdout.on('error', () => process.exit(0));
