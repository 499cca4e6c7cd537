'use strict';
/**
 * Loading the pinned simulator (the npm package's `dist/sim`) for Maple's Node programs:
 * the one already loaded when the process started from Maple's startup snapshot for the
 * same package (snapshot.js), else the directory given on the command line, else the
 * package as resolved from the current directory or from the checkout beside these files.
 * Exits with code 3 and one line when it is nowhere.
 */
const path = require('path');

function loadSim(explicitDir) {
  const loaded = globalThis.__mapleSim;
  if (loaded && (!explicitDir || path.resolve(explicitDir) === loaded.dir)) return loaded.Sim;
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

module.exports = {loadSim};
