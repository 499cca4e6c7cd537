#!/usr/bin/env node
/**
 * Maple's team reader: parses teams with the simulator's own `Teams.import` (Showdown
 * export/"paste" text, packed or JSON), checks them with its `TeamValidator`, and packs them.
 *
 *   node teams.js PATH_TO_pokemon-showdown < request.json
 *
 * Request: `{"format": "gen9ou" | null, "teams": [{"name": "...", "text": "..."}, ...]}`;
 * `format: null` skips validation (an external server may know formats this package does not).
 * Reply on stdout, one entry per team in order:
 *   `[{"name": "...", "packed": "..." | null, "problems": ["..."]}, ...]`
 * where `problems` is empty for a legal team; otherwise it holds the validator's messages
 * (or why the text is not a team), and `packed` is null when the text could not be read.
 */
'use strict';
const {loadSim} = require('./load_sim');

const Sim = loadSim(process.argv[2]);

function check(entry, validator) {
  let sets;
  try {
    sets = Sim.Teams.import(entry.text);
  } catch (err) {
    return {name: entry.name, packed: null, problems: [`not a team: ${err.message || err}`]};
  }
  if (!sets || !sets.length) {
    return {name: entry.name, packed: null, problems: ['no Pokémon found (not a Showdown team)']};
  }
  // The validator may normalise the sets (as the server does), so pack after it.
  const problems = validator ? (validator.validateTeam(sets) || []) : [];
  return {name: entry.name, packed: Sim.Teams.pack(sets), problems};
}

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', chunk => { input += chunk; });
process.stdin.on('end', () => {
  const request = JSON.parse(input);
  const validator = request.format ? Sim.TeamValidator.get(request.format) : null;
  const reply = request.teams.map(entry => check(entry, validator));
  process.stdout.write(JSON.stringify(reply));
});
