'use strict';
/**
 * The entry of Maple's V8 startup snapshot: the pinned simulator loaded, with the data a
 * gen 9 battle and the team validator use, so that a Node program started from the snapshot
 * skips the ~1 s of CPU a fresh process spends compiling and executing the simulator's
 * modules and data before its first battle (docs/benchmarks.md).
 *
 *   node --snapshot-blob sim.blob --build-snapshot snapshot.js PATH_TO_pokemon-showdown
 *   node --snapshot-blob sim.blob sim_host.js PATH_TO_pokemon-showdown ...
 *
 * Started from the blob, the process runs the script named first on its command line (the
 * rest are that script's arguments), and `load_sim.js` hands it the loaded simulator when it
 * asks for the same package. Built by mapleenv/showdown/snapshot.py, which checks that a
 * seeded battle plays the same from the snapshot as without it before it keeps the blob.
 *
 * Node's snapshot builder can require built-in modules only, so the simulator's files are
 * loaded by the small CommonJS loader below. The `repl` and `http(s)` built-ins cannot be
 * held in a snapshot; the simulator's battle code never calls them (only its REPL and web
 * helpers do), so they are stand-ins with the names those helpers use, each loading the real
 * module on first use.
 */
const fs = require('fs');
const path = require('path');
const v8 = require('v8');

const LAZY = {
  repl: ['start'],
  http: ['request', 'get', 'createServer', 'Agent'],
  https: ['request', 'get', 'createServer', 'Agent'],
  child_process: ['fork', 'spawn', 'exec', 'execFile', 'execSync', 'spawnSync'],
  cluster: ['fork', 'on', 'isMaster', 'isPrimary', 'setupMaster', 'setupPrimary', 'workers'],
};

function lazyBuiltin(name) {
  let real = null;
  const load = () => real || (real = require(name));
  const names = LAZY[name];
  return new Proxy({}, {
    get: (_, key) => (names.includes(key) ? load()[key] : undefined),
    ownKeys: () => names,
    getOwnPropertyDescriptor: (_, key) => (names.includes(key)
      ? {configurable: true, enumerable: true, get: () => load()[key]} : undefined),
  });
}

function resolveFile(base) {
  for (const file of [base, `${base}.js`, `${base}.json`, path.join(base, 'index.js')]) {
    try {
      if (fs.statSync(file).isFile()) return file;
    } catch (e) { /* not this one */ }
  }
  return null;
}

function resolvePackage(name, dir) {
  for (let d = dir; ; d = path.dirname(d)) {
    const base = path.join(d, 'node_modules', name);
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(base, 'package.json'), 'utf8'));
      const file = resolveFile(path.join(base, pkg.main || 'index.js'));
      if (file) return file;
    } catch (e) { /* not installed here */ }
    if (d === path.dirname(d)) return null;
  }
}

const modules = new Map();

function makeRequire(dir) {
  return function requireFrom(spec) {
    const bare = spec.startsWith('node:') ? spec.slice(5) : spec;
    if (LAZY[bare]) return lazyBuiltin(bare);
    const relative = spec.startsWith('.') || spec.startsWith('/');
    if (!relative) {
      try {
        return require(bare);
      } catch (e) { /* not a built-in: an npm package */ }
    }
    const file = relative ? resolveFile(path.resolve(dir, spec)) : resolvePackage(spec, dir);
    if (!file) {
      const err = new Error(`Cannot find module '${spec}' from ${dir}`);
      err.code = 'MODULE_NOT_FOUND';
      throw err;
    }
    return loadFile(file);
  };
}

function loadFile(file) {
  if (modules.has(file)) return modules.get(file).exports;
  const module = {exports: {}, filename: file};
  modules.set(file, module);
  const source = fs.readFileSync(file, 'utf8');
  if (file.endsWith('.json')) {
    module.exports = JSON.parse(source);
    return module.exports;
  }
  const body = `${source.replace(/^#!.*/, '')}\n//# sourceURL=${file}`;
  const fn = new Function('exports', 'require', 'module', '__filename', '__dirname', body);
  fn.call(module.exports, module.exports, makeRequire(path.dirname(file)), module, file,
    path.dirname(file));
  return module.exports;
}

/** One seeded battle of default choices and a validated team, as the first of each would
 * load them: the formats list, the gen 9 data with learnsets, the random-battle sets. */
function warmUp(Sim) {
  for (const format of ['gen9randombattle', 'gen9randomdoublesbattle']) {
    const battle = new Sim.Battle({formatid: format, seed: [1, 2, 3, 4]});
    battle.setPlayer('p1', {name: 'a', seed: [5, 6, 7, 8]});
    battle.setPlayer('p2', {name: 'b', seed: [9, 10, 11, 12]});
    for (let turn = 0; turn < 20 && !battle.ended; turn++) {
      battle.makeChoices('default', 'default');
    }
    battle.destroy();
  }
  Sim.TeamValidator.get('gen9ou').validateTeam(Sim.Teams.generate('gen9randombattle'));
}

const showdownDir = path.resolve(process.argv[2] || '');
const Sim = loadFile(path.join(showdownDir, 'dist', 'sim', 'index.js'));
warmUp(Sim);
globalThis.__mapleSim = {dir: showdownDir, Sim};

v8.startupSnapshot.setDeserializeMainFunction(() => {
  const {createRequire} = require('module');
  const script = path.resolve(process.argv[1]);
  process.argv[1] = script;
  createRequire(script)(script);
});
