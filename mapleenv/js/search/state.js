'use strict';
/**
 * Turning a view into a running Showdown `Battle`: teams in, then the state the view knows
 * written over the fresh battle (HP, status and its counters, boosts, volatiles, PP, items,
 * Tera, side conditions with layers and turns, weather, terrain and pseudo-weathers, the
 * turn number), then the requests made again from that state.
 */
const {toID, activeFirst, opponentSets, ownSets} = require('./world');

const WEATHER_TURNS = 5;
const TERRAIN_TURNS = 5;
// View effect ids (poke-env's Effect names, lowercased without underscores) -> volatiles
// the world rebuilds. Durations the view cannot know are the simulator's own defaults.
const VOLATILES = new Set([
  'substitute', 'leechseed', 'confusion', 'taunt', 'encore', 'yawn', 'aquaring', 'ingrain',
  'focusenergy', 'curse', 'disable', 'torment', 'magnetrise', 'saltcure', 'attract',
  'nightmare', 'charge', 'throatchop', 'healblock', 'embargo', 'glaiverush', 'destinybond',
  'noretreat', 'octolock', 'tarshot', 'gastroacid', 'powertrick', 'smackdown', 'laserfocus',
  'stockpile', 'partiallytrapped', 'roost', 'flashfire', 'slowstart', 'protosynthesis',
  'quarkdrive', 'perishsong',
]);
const PARTIAL_TRAP = new Set([
  'bind', 'clamp', 'firespin', 'infestation', 'magmastorm', 'sandtomb', 'snaptrap',
  'thundercage', 'whirlpool', 'wrap',
]);

const SCREEN_TURNS = {reflect: 5, lightscreen: 5, auroraveil: 5, tailwind: 4, safeguard: 5,
  mist: 5, luckychant: 5};
const LAYERED = new Set(['spikes', 'toxicspikes']);

function setStatus(battle, mon, known) {
  if (!known.status || known.status === 'fnt') return;
  mon.status = known.status;
  mon.statusState = battle.initEffectState({id: known.status, target: mon});
  if (known.status === 'slp') {
    // the simulator draws 1-3 turns asleep (time 2-4 counting the wake-up turn)
    const total = known.rest ? 3 : battle.random(2, 5);
    mon.statusState.startTime = total;
    mon.statusState.time = Math.max(1, total - (known.status_turns || 0));
    mon.statusState.fromRest = Boolean(known.rest); // for the engine's Rest counter (dump.js)
  } else if (known.status === 'tox') {
    mon.statusState.stage = Math.max(0, known.status_turns || 0);
  }
}

function setVolatiles(battle, mon, known, foeActive) {
  for (const raw of known.volatiles || []) {
    let id = toID(raw);
    if (PARTIAL_TRAP.has(id)) id = 'partiallytrapped';
    if (id.startsWith('perish')) id = 'perishsong';
    if (!VOLATILES.has(id) || mon.volatiles[id]) continue;
    const state = battle.initEffectState({id, target: mon, source: foeActive});
    if (id === 'substitute') state.hp = Math.floor(mon.maxhp / 4);
    if (id === 'leechseed') state.sourceSlot = foeActive.getSlot();
    if (id === 'confusion') state.time = battle.random(2, 6);
    if (id === 'taunt') state.duration = 3;
    if (id === 'encore') {
      state.move = toID(known.last_move) || mon.moveSlots[0].id;
      state.duration = 3;
    }
    if (id === 'disable') state.duration = 4;
    if (id === 'yawn') state.duration = 2;
    if (id === 'partiallytrapped') {
      state.duration = 5;
      state.sourceEffect = battle.dex.conditions.get('wrap');
    }
    if (id === 'perishsong') {
      const match = /perish(\d)/.exec(toID(raw));
      state.duration = match ? Number(match[1]) + 1 : 4;
    }
    mon.volatiles[id] = state;
  }
  if (known.protect_counter > 0) {
    const state = battle.initEffectState({id: 'stall', target: mon, duration: 2});
    state.counter = Math.pow(3, known.protect_counter);
    mon.volatiles.stall = state;
  }
  if (known.must_recharge) {
    mon.volatiles.mustrecharge = battle.initEffectState({id: 'mustrecharge', target: mon,
      duration: 2});
  }
  const rampage = known.rampage;
  if (rampage && mon.hasMove(toID(rampage.move))) {
    // locked in (onLockMove); its turns left (lockedmove's trueDuration, 2-3 from its
    // first use, one less each turn) drawn where the view cannot tell them
    mon.volatiles.lockedmove = battle.initEffectState({id: 'lockedmove', target: mon,
      move: toID(rampage.move), duration: 1,
      trueDuration: rampage.uses >= 2 ? 1 : battle.random(1, 3)});
  }
  const item = mon.getItem();
  if (item.isChoice && known.choice_move && mon.hasMove(toID(known.choice_move))) {
    mon.volatiles.choicelock = battle.initEffectState({id: 'choicelock', target: mon,
      move: toID(known.choice_move)});
  }
}

function setPokemon(battle, mon, known, own, foeActive) {
  if (own) {
    mon.maxhp = mon.baseMaxhp = known.maxhp;
    for (const stat of Object.keys(known.stats || {})) {
      mon.storedStats[stat] = mon.baseStoredStats[stat] = known.stats[stat];
    }
    mon.hp = known.hp;
    const forme = battle.dex.species.get(known.forme || '');
    if (mon.isActive && forme.exists && forme.id !== mon.species.id &&
        toID(forme.baseSpecies) === toID(mon.species.baseSpecies)) {
      // a forme its ability changed in battle (Morpeko-Hangry, Eiscue-Noice); the stats
      // are the new forme's, from the set's (random-battle) EVs and IVs
      mon.formeChange(forme.name, null, false);
    }
  } else {
    mon.hp = known.fainted ? 0 : Math.max(1, Math.round(known.hp_fraction * mon.maxhp));
    // the HP seen is from before it left the field: poke-env heals a known Regenerator
    // then, the world one its set holds
    if (!known.active && !known.fainted && known.ability == null &&
        mon.ability === 'regenerator') {
      mon.hp = Math.min(mon.maxhp, mon.hp + Math.floor(mon.maxhp / 3));
    }
  }
  if (known.terastallized && mon.teraType) battle.actions.terastallize(mon);
  for (const move of known.moves) { // a fainted Pokémon's PP and item too (Revival Blessing)
    const slot = mon.moveSlots.find(s => s.id === move.id);
    if (!slot) continue;
    if (move.pp != null) slot.pp = Math.max(0, Math.min(slot.maxpp, move.pp));
    else if (move.used) slot.pp = Math.max(0, slot.maxpp - move.used);
  }
  if (known.item === '') mon.item = '';
  if (known.fainted || mon.hp <= 0) {
    mon.hp = 0;
    mon.fainted = true;
    mon.status = 'fnt';
    return;
  }
  setStatus(battle, mon, known);
  if (mon.isActive) {
    for (const stat of Object.keys(known.boosts || {})) mon.boosts[stat] = known.boosts[stat];
    setVolatiles(battle, mon, known, foeActive);
    mon.activeTurns = Math.max(1, known.active_turns || 1);
  }
}

function setSide(battle, side, known) {
  for (const [raw, value] of Object.entries(known.conditions || {})) {
    const id = toID(raw);
    const condition = battle.dex.conditions.get(id);
    if (!condition.exists) continue;
    const state = battle.initEffectState({id, target: side});
    if (LAYERED.has(id)) state.layers = Math.max(1, Math.min(id === 'spikes' ? 3 : 2, value));
    if (SCREEN_TURNS[id]) state.duration = Math.max(1, SCREEN_TURNS[id] - (value || 0));
    side.sideConditions[id] = state;
  }
  if (!known.can_tera) for (const mon of side.pokemon) mon.canTerastallize = null;
}

function setField(battle, field) {
  if (field.weather) {
    const id = toID(field.weather.id);
    if (battle.dex.conditions.get(id).exists) {
      battle.field.weather = id;
      battle.field.weatherState = battle.initEffectState({id,
        duration: Math.max(1, WEATHER_TURNS - (field.weather.turns || 0))});
    }
  } else {
    battle.field.weather = '';
    battle.field.weatherState = battle.initEffectState({id: ''});
  }
  battle.field.terrain = '';
  battle.field.terrainState = battle.initEffectState({id: ''});
  // a fresh battle's pseudo-weathers are its format's rules (sleep clause...): kept
  for (const [raw, turns] of Object.entries(field.fields || {})) {
    const id = toID(raw);
    if (!battle.dex.conditions.get(id).exists) continue;
    const duration = Math.max(1, TERRAIN_TURNS - (turns || 0));
    if (id.endsWith('terrain')) {
      battle.field.terrain = id;
      battle.field.terrainState = battle.initEffectState({id, duration});
    } else {
      battle.field.pseudoWeather[id] = battle.initEffectState({id, duration});
    }
  }
}

/** A Battle in the state of `view` (opponent team drawn with `gen`, or `truth`). */
function buildWorld(Sim, gen, view, options = {}) {
  const dex = Sim.Dex.forFormat(view.format);
  const own = view.me.pokemon;
  const foeSets = opponentSets(gen, dex, view.foe, options.truth, options.tries || 12);
  const foeKnown = view.foe.pokemon.slice();
  while (foeKnown.length < foeSets.length) {
    foeKnown.push({species: foeSets[foeKnown.length].species, hp_fraction: 1, moves: []});
  }
  const ownOrder = activeFirst(own, p => p.active);
  const foeOrder = activeFirst(foeKnown, p => p.active);
  // a fainted active: the switch-in asked for at the end of a turn (a mid-turn switch, after
  // U-turn or an Eject Button, cannot be rebuilt: the rest of that turn is not known)
  const mustSwitch = Boolean(own[ownOrder[0]] && own[ownOrder[0]].fainted);
  if (mustSwitch && !view.force_switch) {
    throw new Error('the seat must switch (its active Pokémon fainted) but its request does not');
  }
  const ownTeam = ownSets(dex, view.me);
  const battle = new Sim.Battle({
    formatid: view.format,
    seed: options.seed,
    p1: {name: 'p1', team: ownOrder.map(i => ownTeam[i])},
    p2: {name: 'p2', team: foeOrder.map(i => foeSets[i])},
  });
  const [p1, p2] = battle.sides;
  ownOrder.forEach((k, i) => setPokemon(battle, p1.pokemon[i], own[k], true, p2.active[0]));
  foeOrder.forEach((k, i) => setPokemon(battle, p2.pokemon[i], foeKnown[k], false,
    p1.active[0]));
  setSide(battle, p1, view.me);
  setSide(battle, p2, view.foe);
  setField(battle, view.field || {});
  battle.turn = Math.max(1, view.turn || 1);
  [view.me, view.foe].forEach((seen, i) => {
    const side = battle.sides[i];
    // as the simulator counts faints: a side with none left has lost (checkWin); a Pokémon
    // revived by Revival Blessing is left again but its faint still counts (Last Respects)
    const fainted = side.pokemon.filter(mon => mon.fainted).length;
    side.totalFainted = Math.max(fainted, (seen && seen.faints) || 0);
    side.pokemonLeft = side.pokemon.length - fainted;
    const active = side.active[0];
    if (mustSwitch && active && active.fainted && side.pokemonLeft) active.switchFlag = true;
  });
  try {
    battle.makeRequest(mustSwitch ? 'switch' : 'move');
  } catch (err) {
    const state = battle.sides.map(side => `${side.id}: ${side.active[0].name} ` +
      `${side.active[0].hp}/${side.active[0].maxhp} ${side.active[0].status}`).join(', ');
    throw new Error(`cannot build a world (${state}): ${err.message}`);
  }
  battle.log = [];
  battle.sentLogPos = 0;
  battle.inputLog = [];
  return battle;
}

module.exports = {buildWorld};
