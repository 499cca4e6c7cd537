'use strict';
/**
 * The tracked fields of a battle, from one side's seat: what a world must reproduce of the
 * real battle (fidelity checks compare these field by field; docs/search.md).
 */
const TRACKED_VOLATILES = [
  'substitute', 'leechseed', 'confusion', 'taunt', 'encore', 'yawn', 'stall', 'mustrecharge',
  'choicelock', 'partiallytrapped', 'perishsong', 'disable', 'torment', 'focusenergy',
  'aquaring', 'ingrain', 'curse', 'saltcure', 'magnetrise', 'attract', 'lockedmove',
  'twoturnmove', 'protosynthesis', 'quarkdrive', 'flashfire',
];

function monFields(mon, own) {
  const out = {
    species: mon.species.id,
    fainted: mon.fainted || mon.hp <= 0,
    active: mon.isActive,
    status: mon.fainted ? '' : mon.status,
    item: mon.item,
    ability: mon.ability,
    tera: mon.terastallized || '',
    level: mon.level,
    moves: mon.moveSlots.map(s => s.id).sort().join(','),
    hp: own ? mon.hp : Math.round(100 * mon.hp / mon.maxhp),
  };
  if (own) out.pp = mon.moveSlots.map(s => `${s.id}:${s.pp}`).sort().join(',');
  if (mon.isActive) {
    for (const stat of Object.keys(mon.boosts)) out[`boost.${stat}`] = mon.boosts[stat];
    for (const id of TRACKED_VOLATILES) out[`volatile.${id}`] = !!mon.volatiles[id];
    if (mon.status === 'tox') out.toxstage = mon.statusState.stage || 0;
  }
  return out;
}

function sideFields(side, own) {
  const out = {};
  for (const mon of side.pokemon) out[mon.species.id] = monFields(mon, own);
  const conditions = {};
  for (const [id, state] of Object.entries(side.sideConditions)) conditions[id] = state.layers || 1;
  out.conditions = JSON.stringify(Object.keys(conditions).sort().map(k => [k, conditions[k]]));
  out.can_tera = side.pokemon.some(m => m.canTerastallize);
  // the simulator ends a battle when a side's count reaches 0 (not by its fainted flags);
  // Last Respects and Supreme Overlord read the fainted count
  out.pokemon_left = side.pokemonLeft;
  out.total_fainted = side.totalFainted;
  return out;
}

/** `{me, foe, field}` of `battle` seen from side index `seat` (0: p1). */
function summarize(battle, seat = 0) {
  return {
    me: sideFields(battle.sides[seat], true),
    foe: sideFields(battle.sides[1 - seat], false),
    field: {
      weather: battle.field.weather || '',
      terrain: battle.field.terrain || '',
      pseudo: Object.keys(battle.field.pseudoWeather).sort().join(','),
      turn: battle.turn,
    },
  };
}

module.exports = {summarize};
