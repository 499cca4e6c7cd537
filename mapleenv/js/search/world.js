'use strict';
/**
 * Worlds from one seat's view: a complete Showdown `Battle` consistent with what the seat
 * knows (its own side exact, from its request; the opponent's revealed Pokémon with sets
 * drawn from the format's random-battle generator and pruned by what was revealed, its
 * unrevealed slots drawn from the generator's species pool). The view is the JSON that
 * `mapleenv/search/view.py` writes from a poke-env battle; docs/search.md lists what a
 * world models and what it does not.
 */

function toID(text) {
  return String(text || '').toLowerCase().replace(/[^a-z0-9]+/g, '');
}

/** A type's name (`Fighting`) from its id (`fighting`); '' when unknown. */
function typeName(dex, id) {
  const type = id ? dex.types.get(id) : null;
  return type && type.exists ? type.name : '';
}

/** The generator's set pool for a species id (its base forme when the forme has none). */
function setsSpecies(gen, dex, speciesId) {
  const pool = gen.randomSets;
  let species = dex.species.get(speciesId);
  for (let i = 0; i < 3 && species.exists; i++) {
    if (pool[species.id]) return species;
    const next = species.battleOnly || species.changesFrom || species.baseSpecies;
    const nextSpecies = dex.species.get(Array.isArray(next) ? next[0] : next);
    if (!nextSpecies.exists || nextSpecies.id === species.id) break;
    species = nextSpecies;
  }
  return species.exists ? species : null;
}

/** How well a generated set agrees with what the view revealed (higher is better). */
function agreement(set, known) {
  let score = 0;
  const moves = new Set(set.moves.map(toID));
  for (const move of known.moves) if (moves.has(move.id)) score += 1;
  if (known.item != null && toID(set.item) === known.item) score += 1;
  if (known.ability != null && toID(set.ability) === known.ability) score += 1;
  if (known.tera_type != null && toID(set.teraType) === known.tera_type) score += 1;
  // two different moves chosen since it switched in: no Choice Band, Specs or Scarf
  if (noChoiceItem(known) && !toID(set.item).startsWith('choice')) score += 1;
  return score;
}

function noChoiceItem(known) {
  return known.item == null && Boolean(known.not_choice);
}

function maxAgreement(known) {
  return known.moves.length + (known.item != null) + (known.ability != null) +
    (known.tera_type != null) + noChoiceItem(known);
}

/** A set for one revealed opponent Pokémon: generator draws, the most consistent kept,
 * then everything revealed written over it (revealed moves first, the rest from the draw). */
function sampleRevealed(gen, dex, known, tries) {
  const species = setsSpecies(gen, dex, known.species);
  let best = null;
  let bestScore = -1;
  if (species) {
    const target = maxAgreement(known);
    for (let i = 0; i < tries && bestScore < target; i++) {
      let set;
      try {
        set = gen.randomSet(species, {}, false, false);
      } catch (err) {
        break;
      }
      const score = agreement(set, known);
      if (score > bestScore) {
        best = set;
        bestScore = score;
      }
    }
  }
  if (!best) {
    const movepool = known.moves.map(m => m.id);
    best = {moves: movepool.length ? movepool : ['tackle'], ability: '', item: '', teraType: ''};
  }
  const revealed = known.moves.map(m => m.id);
  const rest = best.moves.map(toID).filter(id => !revealed.includes(id));
  const set = Object.assign({}, best, {
    species: dex.species.get(known.species).name || known.species,
    name: dex.species.get(known.species).name || known.species,
    level: known.level,
    moves: revealed.concat(rest).slice(0, 4),
  });
  if (known.item != null) set.item = known.item;
  // a species every draw gave a choice item: the generator's other attacker's item
  if (noChoiceItem(known) && toID(set.item).startsWith('choice')) set.item = 'Life Orb';
  if (known.ability != null) set.ability = known.ability;
  if (known.tera_type != null) set.teraType = typeName(dex, known.tera_type) || set.teraType;
  if (known.gender) set.gender = known.gender;
  return set;
}

/** Unrevealed opponent slots: species drawn from the generator's pool, none sharing a base
 * species with the team (species clause). */
function sampleUnrevealed(gen, dex, taken, count) {
  const pool = Object.keys(gen.randomSets);
  const bases = new Set(taken.map(id => toID(dex.species.get(id).baseSpecies)));
  const sets = [];
  for (let guard = 0; sets.length < count && guard < 50 * count; guard++) {
    const species = dex.species.get(gen.prng.sample(pool));
    const base = toID(species.baseSpecies);
    if (!species.exists || bases.has(base)) continue;
    try {
      sets.push(gen.randomSet(species, {}, false, false));
      bases.add(base);
    } catch (err) { /* a species the generator cannot build alone: draw another */ }
  }
  return sets;
}

/** The opponent's team in one world: the given true sets (fidelity checks) or a draw. */
function opponentSets(gen, dex, foe, truth, tries) {
  if (truth) return alignTruth(dex, foe, truth);
  const sets = foe.pokemon.map(known => sampleRevealed(gen, dex, known, tries));
  const missing = Math.max(0, (foe.team_size || 6) - sets.length);
  return sets.concat(sampleUnrevealed(gen, dex, foe.pokemon.map(p => p.species), missing));
}

/** The true sets (fidelity checks) in the view's order: revealed ones first, by species. */
function alignTruth(dex, foe, truth) {
  const rest = truth.map(set => Object.assign({}, set));
  const base = id => toID(dex.species.get(id).baseSpecies);
  const out = [];
  for (const known of foe.pokemon) {
    let i = rest.findIndex(set => toID(set.species) === toID(known.species));
    if (i < 0) i = rest.findIndex(set => base(set.species) === base(known.species));
    if (i < 0) i = 0;
    out.push(rest.splice(i, 1)[0]);
  }
  return out.concat(rest);
}

function ownSets(dex, me) {
  return me.pokemon.map(p => ({
    name: p.name || p.species,
    species: p.species,
    level: p.level,
    gender: p.gender || '',
    item: p.item || '',
    ability: p.ability || '',
    moves: p.moves.map(m => m.id),
    teraType: typeName(dex, p.tera_type) || dex.species.get(p.species).types[0],
    // the request's stats are written over these; a forme changed in battle recomputes
    // them from the random-battle spread
    evs: {hp: 84, atk: 84, def: 84, spa: 84, spd: 84, spe: 84},
  }));
}

/** Active first: the world's battle starts with both leads out, so the actives lead. */
function activeFirst(list, isActive) {
  const index = list.findIndex(isActive);
  if (index <= 0) return list.map((item, i) => i);
  const order = [index];
  for (let i = 0; i < list.length; i++) if (i !== index) order.push(i);
  return order;
}

module.exports = {toID, activeFirst, opponentSets, ownSets};
