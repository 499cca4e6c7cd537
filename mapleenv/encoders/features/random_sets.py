"""What an opponent's random-battle sets still allow, given what it revealed.

The singles_sets encoder's ``opponent_sets`` block (docs/observation.md). A random-battle
Pokémon is built from one of its species' few sets in the pinned ``pokemon-showdown``
package (``data/random-battles/gen*/sets.json``, read by :mod:`dex`): a role, a movepool
the four moves are drawn from, abilities and Tera types. A set stays a candidate while
its movepool holds every revealed move, its abilities the revealed ability and its Tera
types the revealed Tera type. Pure functions, cached per (species, what was revealed).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np
from poke_env.battle import MoveCategory, Pokemon, PokemonType, Target

from mapleenv.encoders.features import dex, layout, vocab
from mapleenv.encoders.features.futility import is_self_heal

# moves a Pokémon can show without them being in its set
NOT_FROM_SET = frozenset({"struggle", "recharge"})
RECOVERY = frozenset({"rest", "strengthsap"})
_SELF_TARGETS = (Target.SELF, Target.ALLY_SIDE, Target.ALLIES)


@cache
def move_properties(gen: int, move_id: str) -> tuple[bool, ...]:
    """Flags of a move in the order of :data:`layout.SET_PROPERTIES`."""
    try:
        m = dex.move(gen, move_id)
        category, target = m.category, m.target
    except Exception:  # noqa: BLE001 - an id poke-env does not know has no properties
        return (False,) * len(layout.SET_PROPERTIES)
    status_move = category is MoveCategory.STATUS
    boosts = m.boosts or {}
    setup = status_move and (
        (target in _SELF_TARGETS and any(v > 0 for v in boosts.values()))
        or any(v > 0 for v in (m.self_boost or {}).values())
    )
    flags = {
        "priority": not status_move and m.priority > 0,
        "setup": setup,
        "recovery": is_self_heal(m) or move_id in RECOVERY,
        "pivot": bool(m.self_switch),
        "status": m.status is not None
        or (m.volatile_status is not None and m.volatile_status.name in ("YAWN", "LEECH_SEED")),
        "hazard": m.side_condition in vocab.HAZARDS,
        "hazard_removal": move_id in vocab.HAZARD_CLEARERS,
    }
    return tuple(flags[name] for name in layout.SET_PROPERTIES)


@dataclass(frozen=True)
class SetKnowledge:
    """One opponent Pokémon's candidate sets, summarised (see the ``opponent_sets`` block)."""

    known: bool = False
    sets_left: int = 0
    moves_left: int = 0
    properties: tuple[float, ...] = (0.0,) * len(layout.SET_PROPERTIES)
    tera: tuple[float, ...] = (0.0,) * len(vocab.TERA_TYPES)
    abilities: tuple[str, ...] = ()  # ability ids of the candidate sets

    def vector(self) -> np.ndarray:
        """The block's floats, in the layout's order."""
        head = [float(self.known), min(self.sets_left, 4) / 4.0, min(self.moves_left, 8) / 8.0]
        return np.asarray([*head, *self.properties, *self.tera], np.float32)


def _tera_index(name: str) -> int | None:
    try:
        return vocab.TERA_INDEX.get(PokemonType[name])
    except KeyError:
        return None


@lru_cache(maxsize=50_000)
def knowledge(
    gen: int,
    species: str,
    base_species: str,
    revealed: frozenset[str],
    ability: str | None,
    tera: PokemonType | None,
) -> SetKnowledge:
    """Summary of ``species``' sets consistent with the ``revealed`` move ids, the
    revealed ``ability`` id and Tera type (``None``: not revealed)."""
    data = dex.random_battle_sets(gen)
    sets = data.get(species) or data.get(base_species) or ()
    if not sets:
        return SetKnowledge()
    moves = revealed - NOT_FROM_SET
    tera_name = tera.name if tera is not None else None
    left = [
        s
        for s in sets
        if moves <= s[0]
        and (ability is None or not s[1] or ability in s[1])
        and (tera_name is None or tera_name in s[2])
    ]
    pool = left or list(sets)
    n = len(layout.SET_PROPERTIES)
    shown = [any(move_properties(gen, m)[k] for m in moves) for k in range(n)]
    properties = tuple(
        1.0
        if shown[k]
        else sum(any(move_properties(gen, m)[k] for m in s[0] - moves) for s in pool) / len(pool)
        for k in range(n)
    )
    counts = [0.0] * len(vocab.TERA_TYPES)
    if tera is not None and tera in vocab.TERA_INDEX:
        counts[vocab.TERA_INDEX[tera]] = 1.0
    else:
        for s in pool:
            for name in s[2]:
                k = _tera_index(name)
                if k is not None:
                    counts[k] += 1.0 / len(pool)
    unrevealed = frozenset().union(*(s[0] for s in pool)) - moves
    abilities = tuple(sorted(frozenset().union(*(s[1] for s in pool))))
    return SetKnowledge(
        known=True,
        sets_left=len(left),
        moves_left=len(unrevealed),
        properties=properties,
        tera=tuple(min(c, 1.0) for c in counts),
        abilities=abilities,
    )


def _inputs(gen: int, mon: Pokemon) -> tuple[object, ...]:
    """The arguments of :func:`knowledge` for an opponent Pokémon as poke-env tracks it."""
    return (
        gen,
        mon.species,
        mon.base_species,
        frozenset(mon.moves),
        mon.ability or None,
        mon.tera_type if mon.is_terastallized else None,
    )


def set_knowledge(gen: int, mon: Pokemon) -> SetKnowledge:
    """:func:`knowledge` of an opponent Pokémon as poke-env tracks it."""
    return knowledge(*_inputs(gen, mon))  # type: ignore[arg-type]


_summaries: dict[tuple[object, ...], tuple[np.ndarray, tuple[str, ...]]] = {}


def set_summary(gen: int, mon: Pokemon) -> tuple[np.ndarray, tuple[str, ...]]:
    """(``vector()``, ``abilities``) of :func:`set_knowledge`, cached on the same inputs.
    The vector is shared: copy it, never modify it."""
    key = _inputs(gen, mon)
    found = _summaries.get(key)
    if found is None:
        known = knowledge(*key)  # type: ignore[arg-type]
        if len(_summaries) > 50_000:
            _summaries.clear()
        found = _summaries[key] = (known.vector(), known.abilities)
    return found
