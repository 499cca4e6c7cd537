'use strict';
/**
 * A world (a complete Showdown `Battle`, state.js) written out as plain JSON, the exact state
 * the simulator holds: both sides' Pokémon (species, level, types, stored stats, HP, status
 * with its sleep counters, item, ability, Tera, moves with PP and what the request disables),
 * the actives' boosts and volatiles with their durations, side and slot conditions (layers,
 * turns, Wish, Future Sight), weather, terrain and pseudo-weathers with their turns, and the
 * seat's legal choices. `mapleenv/search/engine/state.py` turns it into a poke-engine state;
 * the dump is the engine-free half of that, so fixed dumps can be saved and read in tests.
 */
const {legalChoices} = require('./game');

/** Turns left of an effect state (`duration`), or null when it has none. */
function turnsLeft(state) {
  return state && typeof state.duration === 'number' ? state.duration : null;
}

function dumpVolatiles(mon) {
  const out = {};
  for (const [id, state] of Object.entries(mon.volatiles)) {
    const entry = {duration: turnsLeft(state)};
    if (id === 'confusion') entry.time = state.time;
    if (id === 'lockedmove') entry.true_duration = state.trueDuration;
    if (id === 'substitute') entry.hp = state.hp;
    if (id === 'twoturnmove') entry.move = state.move;
    if (id === 'encore' || id === 'choicelock' || id === 'disable') entry.move = state.move;
    if (id === 'protosynthesis' || id === 'quarkdrive') entry.stat = state.bestStat || null;
    if (id === 'stall') entry.counter = state.counter;
    out[id] = entry;
  }
  return out;
}

/** The moves the side's request lets its active choose (null when it asks no move). */
function enabledMoves(side) {
  const request = side.activeRequest;
  const active = request && request.active && request.active[0];
  if (!active || request.wait || request.forceSwitch) return null;
  return active.moves.filter(m => !m.disabled).map(m => m.id);
}

function dumpPokemon(mon, enabled) {
  const status = mon.fainted ? '' : mon.status;
  const out = {
    species: mon.species.id,
    base_species: mon.baseSpecies.id,
    level: mon.level,
    types: mon.getTypes(true, true).map(t => t.toLowerCase()),
    base_types: mon.baseSpecies.types.map(t => t.toLowerCase()),
    hp: mon.fainted ? 0 : mon.hp,
    maxhp: mon.maxhp,
    stats: Object.assign({}, mon.storedStats),
    status,
    status_time: status === 'slp' ? mon.statusState.time : null,
    status_start: status === 'slp' ? mon.statusState.startTime : null,
    rest: status === 'slp' ? Boolean(mon.statusState.fromRest) : false,
    toxic_stage: status === 'tox' ? mon.statusState.stage || 0 : 0,
    item: mon.item || '',
    ability: mon.ability || '',
    base_ability: mon.baseAbility || '',
    tera_type: mon.teraType ? mon.teraType.toLowerCase() : '',
    terastallized: mon.terastallized ? mon.terastallized.toLowerCase() : '',
    weight_kg: mon.getWeight() / 10,
    active: mon.isActive,
    fainted: Boolean(mon.fainted || mon.hp <= 0),
    moves: mon.moveSlots.map(s => ({id: s.id, pp: s.pp, maxpp: s.maxpp,
      disabled: Boolean(s.disabled) || (enabled !== null && !enabled.includes(s.id))})),
  };
  if (mon.isActive) {
    out.boosts = Object.assign({}, mon.boosts);
    out.volatiles = dumpVolatiles(mon);
    out.last_move = mon.lastMove ? mon.lastMove.id : '';
    out.active_turns = mon.activeTurns;
    out.move_this_turn = mon.moveThisTurn || '';
  }
  return out;
}

function dumpSide(side) {
  const request = side.activeRequest;
  const active = request && request.active && request.active[0];
  const enabled = enabledMoves(side);
  const conditions = {};
  for (const [id, state] of Object.entries(side.sideConditions)) {
    conditions[id] = {layers: state.layers || 1, duration: turnsLeft(state)};
  }
  const slot = {};
  for (const [id, state] of Object.entries(side.slotConditions[0] || {})) {
    const entry = {duration: turnsLeft(state)};
    if (id === 'wish') entry.hp = state.hp;
    if (id === 'futuremove' && state.source) entry.source = state.source.species.id;
    slot[id] = entry;
  }
  return {
    pokemon: side.pokemon.map(mon => dumpPokemon(mon, mon.isActive ? enabled : null)),
    conditions,
    slot,
    force_switch: Boolean(request && request.forceSwitch),
    trapped: Boolean(active && (active.trapped || active.maybeTrapped)),
    can_tera: side.pokemon.some(m => m.canTerastallize),
  };
}

/** Each of `choices` (simulator choice strings of `side`: `move 2`, `move earthquake
 * terastallize`, `switch 3`; its request's legal ones by default) as the engine names it: a
 * move's id (with `-tera`), or `switch <species id>`; null for one it cannot name. */
function engineNames(side, choices = legalChoices(side)) {
  const names = {};
  const active = side.active[0];
  for (const choice of choices) {
    const [kind, what, tera] = String(choice).split(' ');
    let name = null;
    if (kind === 'switch') {
      const mon = side.pokemon[Number(what) - 1];
      if (mon) name = `switch ${mon.species.id}`;
    } else if (kind === 'move' && active) {
      const slot = /^\d+$/.test(what) ? active.moveSlots[Number(what) - 1] :
        active.moveSlots.find(s => s.id === what);
      if (slot) name = slot.id + (tera ? '-tera' : '');
    }
    names[choice] = name;
  }
  return names;
}

/** `battle` as plain JSON, p1 (the seat) as `me`, p2 as `foe`; `own`: the seat's choice
 * strings to name (its legal ones by default). */
function dumpBattle(battle, own) {
  const field = battle.field;
  const pseudo = {};
  for (const [id, state] of Object.entries(field.pseudoWeather)) pseudo[id] = turnsLeft(state);
  return {
    turn: battle.turn,
    me: dumpSide(battle.sides[0]),
    foe: dumpSide(battle.sides[1]),
    field: {
      weather: field.weather || '',
      weather_turns: field.weather ? turnsLeft(field.weatherState) : null,
      terrain: field.terrain || '',
      terrain_turns: field.terrain ? turnsLeft(field.terrainState) : null,
      pseudo,
    },
    names: {me: engineNames(battle.sides[0], own || undefined), foe: engineNames(battle.sides[1])},
  };
}

module.exports = {dumpBattle};
