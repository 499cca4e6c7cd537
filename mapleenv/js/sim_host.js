#!/usr/bin/env node
/**
 * Maple's simulator host: runs Pokémon Showdown battles in-process (the npm package's
 * BattleStream) for one Python process, over stdin/stdout.
 *
 *   node sim_host.js [PATH_TO_pokemon-showdown] [--listen SOCKET_PATH]
 *
 * Input, one line each:  `<battle id> <stream-protocol line>`, e.g.
 *   `7 >start {"formatid":"gen9randombattle","seed":[1,2,3,4]}`
 *   `7 >player p1 {"name":"Maple"}`   `7 >p1 move 1`   `7 >p2 switch 3`
 * and `<battle id> destroy` to drop a battle. Lines are handled in order, synchronously.
 * `<battle id> dumpstate p1|p2 [3,8]` answers
 * `<battle id>\nstate\n{"state", "truth", "eval", "rollouts"}\n\n`: the battle's tracked
 * fields from that seat, the other seat's true sets, the search's hand evaluation of the
 * position for that seat and, per horizon given, that evaluation after greedy playouts of
 * so many turns (search fidelity and evaluation checks, mapleenv/js/search/fields.js,
 * game.js, rollout.js).
 *
 * Output: frames separated by a blank line (an empty protocol line inside a message, such
 * as the empty public half of a `|split|` pair, e.g. VGC's Open Team Sheets offer, is sent
 * as `|`, the protocol's no-op line, so a frame never contains "\n\n"):
 *   `<battle id>\n<simulator message>\n\n` for every message the simulator emits
 *   (`update\n...`, `sideupdate\npN\n...`, `end\n{winner,turns,seed}`), then
 *   `<battle id>\nack\n\n` once the line that produced them has been handled, so the reader
 *   knows the reply to each line is complete. Errors in a line are reported as
 *   `<battle id>\nhosterror\n<message>\n\n` (followed by the ack).
 * With `--listen`, the host also serves clients on a Unix socket (same protocol, battle ids
 * private to each connection, a connection's battles dropped when it closes) and writes
 * `-\nlistening\n\n` to stdout once it accepts connections. Battles of all clients run in
 * this one process, which keeps its JIT and caches hot (see docs/benchmarks.md).
 * The host exits when stdin closes (its parent died or closed it).
 */
'use strict';
const {loadSim} = require('./load_sim');

function parseArgs(argv) {
  const opts = {showdownDir: null, listen: null};
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--listen') opts.listen = argv[++i];
    else opts.showdownDir = argv[i];
  }
  return opts;
}

const {summarize} = require('./search/fields');
const {evaluate} = require('./search/game');
const {rollout} = require('./search/rollout');

/** The hand evaluation after greedy rollouts of each horizon in `horizons` ("3,8": turns;
 * four seeded playouts each, averaged): how well a rollout-scored leaf ranks positions. */
function rolloutEvals(battle, seat, horizons) {
  if (!horizons) return {};
  const snapshot = JSON.stringify(battle.toJSON());
  const out = {};
  for (const turns of horizons.split(',').map(Number).filter(n => n > 0 && n <= 500)) {
    let total = 0;
    for (let k = 0; k < 4; k++) {
      const clone = Sim.Battle.fromJSON(snapshot);
      clone.resetRNG([turns, k, 7, 11]);
      total += evaluate(rollout(clone, turns), seat);
    }
    out[turns] = total / 4;
  }
  return out;
}
const opts = parseArgs(process.argv.slice(2));
const Sim = loadSim(opts.showdownDir);

function errorText(err) {
  return String(err && err.stack || err).replace(/\n+/g, '\n');
}

/** An empty line in a message: it would end the frame early (see the header). */
const EMPTY_LINE = /(^|\n)(\n|$)/;

/** A BattleStream whose output goes straight (synchronously) into its client's buffer. */
class HostedBattle extends Sim.BattleStream {
  constructor(id, client) {
    super({keepAlive: true});
    this.id = id;
    this.client = client;
  }
  pushMessage(type, data) {
    if (type === 'end') {
      const log = JSON.parse(data);
      data = JSON.stringify({winner: log.winner, turns: log.turns, seed: log.seed});
    } else if (EMPTY_LINE.test(data)) {
      data = data.split('\n').map(line => line || '|').join('\n');
    }
    this.client.out.push(`${this.id}\n${type}\n${data}\n\n`);
  }
  pushError(err) {
    this.client.out.push(`${this.id}\nhosterror\n${errorText(err)}\n\n`);
  }
}

/** One client (stdin/stdout, or a socket connection) with its own battles. */
class Client {
  constructor(write) {
    this.write = write;
    this.battles = new Map();
    this.out = [];
    this.pending = '';
  }
  handleLine(line) {
    const space = line.indexOf(' ');
    if (space <= 0) return;
    const id = line.slice(0, space);
    const command = line.slice(space + 1);
    try {
      if (command === 'destroy') {
        this.drop(id);
      } else if (command.startsWith('dumpstate')) {
        const [, seat, horizons] = command.split(' ');
        this.dumpState(id, seat === 'p2' ? 1 : 0, horizons);
      } else {
        let battle = this.battles.get(id);
        if (!battle) {
          battle = new HostedBattle(id, this);
          this.battles.set(id, battle);
        }
        battle.write(command);
      }
    } catch (err) {
      this.out.push(`${id}\nhosterror\n${errorText(err)}\n\n`);
    }
    this.out.push(`${id}\nack\n\n`);
  }
  dumpState(id, seat, horizons) {
    const hosted = this.battles.get(id);
    if (!hosted || !hosted.battle) throw new Error(`no battle ${id}`);
    const battle = hosted.battle;
    const truth = battle.sides[1 - seat].pokemon.map(mon => mon.set);
    const state = JSON.stringify({state: summarize(battle, seat), truth,
      eval: evaluate(battle, seat), rollouts: rolloutEvals(battle, seat, horizons)});
    this.out.push(`${id}\nstate\n${state}\n\n`);
  }
  drop(id) {
    const battle = this.battles.get(id);
    if (battle && battle.battle) battle.battle.destroy();
    this.battles.delete(id);
  }
  onData(chunk) {
    this.pending += chunk;
    let newline = this.pending.indexOf('\n');
    if (newline < 0) return;
    let start = 0;
    while (newline >= 0) {
      this.handleLine(this.pending.slice(start, newline));
      start = newline + 1;
      newline = this.pending.indexOf('\n', start);
    }
    this.pending = this.pending.slice(start);
    if (this.out.length) {
      this.write(this.out.join(''));
      this.out = [];
    }
  }
  close() {
    for (const id of [...this.battles.keys()]) this.drop(id);
  }
}

const stdio = new Client(data => process.stdout.write(data));
process.stdin.setEncoding('utf8');
process.stdin.on('data', chunk => stdio.onData(chunk));
process.stdin.on('end', () => process.exit(0));
process.stdout.on('error', () => process.exit(0));

if (opts.listen) {
  const net = require('net');
  const fs = require('fs');
  try { fs.unlinkSync(opts.listen); } catch (e) { /* no stale socket */ }
  const server = net.createServer(socket => {
    socket.setEncoding('utf8');
    socket.setNoDelay?.(true);
    const client = new Client(data => socket.write(data));
    socket.on('data', chunk => client.onData(chunk));
    socket.on('close', () => client.close());
    socket.on('error', () => client.close());
  });
  server.listen(opts.listen, () => process.stdout.write('-\nlistening\n\n'));
}
