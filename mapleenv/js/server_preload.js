/**
 * Loaded into each Showdown server Maple starts (`node --require`, mapleenv/showdown/server.py).
 *
 * At start the server asks git for a version hash (server/monitor.ts, `Monitor.version`):
 * `git add -A` into a scratch index, then `git write-tree`, run from the package's folder.
 * Where the package sits inside a git checkout (Maple's own node_modules, a user's project),
 * that stages the checkout's whole working tree and writes its untracked files into that
 * repository's object store, at every server start. Maple's servers never show the hash,
 * so here a git command run through `child_process.exec` is replaced by one that fails,
 * which the server already handles (no hash); every other command runs as given.
 */
'use strict';
const childProcess = require('child_process');

const exec = childProcess.exec;
const GIT = /^\s*git(\s|$)/;

childProcess.exec = function execWithoutGit(command, ...rest) {
  return exec.call(this, GIT.test(String(command)) ? 'exit 1' : command, ...rest);
};
