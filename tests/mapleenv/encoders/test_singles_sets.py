"""Encoder ``singles_sets``: ``singles_entities`` unchanged plus futile-move and random-battle-set
blocks."""

from __future__ import annotations

import numpy as np
import pytest
from builders import make_battle, own_mon
from conftest import RECORDED_BATTLES, replay_decisions
from poke_env.battle import PokemonType

from mapleenv.encoders import make_encoder, observation_box
from mapleenv.encoders.features import dex, layout, vocab
from mapleenv.encoders.features.random_sets import knowledge
from mapleenv.encoders.singles.entities import SinglesEntitiesEncoder
from mapleenv.encoders.singles.sets import SinglesSetsEncoder

PROPS = layout.SET_PROPERTIES


def venusaur(revealed=(), ability=None, tera=None):
    return knowledge(9, "venusaur", "venusaur", frozenset(revealed), ability, tera)


def tera_shares(k) -> dict[str, float]:
    return {t.name: v for t, v in zip(vocab.TERA_TYPES, k.tera, strict=True) if v}


def test_venusaur_sets_narrow_as_it_reveals_moves() -> None:
    # the pinned sets: Bulky Support (Giga Drain, Leech Seed, Sleep Powder, Sludge Bomb,
    # Substitute; Tera Steel/Water) and Bulky Attacker (Earth Power, Energy Ball, Knock Off,
    # Sleep Powder, Sludge Bomb, Synthesis, Toxic; Tera Dark/Steel/Water)
    sets = dex.random_battle_sets(9)["venusaur"]
    assert len(sets) == 2 and "synthesis" in sets[1][0]
    nothing = venusaur()
    assert (nothing.known, nothing.sets_left, nothing.moves_left) == (True, 2, 10)
    props = dict(zip(PROPS, nothing.properties, strict=True))
    assert props["recovery"] == 0.5 and props["status"] == 1.0 and props["priority"] == 0.0
    assert tera_shares(nothing) == {"DARK": 0.5, "STEEL": 1.0, "WATER": 1.0}
    seeded = venusaur({"leechseed"})
    assert (seeded.sets_left, seeded.moves_left) == (1, 4)
    assert dict(zip(PROPS, seeded.properties, strict=True))["recovery"] == 0.0
    assert tera_shares(seeded) == {"STEEL": 1.0, "WATER": 1.0}
    healer = venusaur({"synthesis"})
    assert dict(zip(PROPS, healer.properties, strict=True))["recovery"] == 1.0  # revealed
    dark = venusaur({"sludgebomb"}, tera=PokemonType.DARK)
    assert dark.sets_left == 1 and tera_shares(dark) == {"DARK": 1.0}
    # a move no set has: no candidate left, the summary falls back to all sets
    odd = venusaur({"hydropump"})
    assert odd.sets_left == 0 and odd.moves_left == 10
    assert knowledge(9, "notapokemon", "notapokemon", frozenset(), None, None).known is False


def test_singles_sets_is_singles_entities_followed_by_the_new_blocks() -> None:
    assert layout.SINGLES_ENTITIES.size == layout.SIZE == 1453  # the shipped agent's layout
    assert layout.SINGLES_SETS.blocks[: len(layout.LAYOUT)] == layout.LAYOUT
    assert layout.SINGLES_SETS.size == 1453 + 4 * 7 + 6 * (3 + len(PROPS) + len(vocab.TERA_TYPES))
    assert (
        layout.for_size(1453) is layout.SINGLES_ENTITIES
        and layout.for_size(layout.SINGLES_SETS.size) is layout.SINGLES_SETS
    )
    assert layout.for_size(116) is None
    enc = make_encoder("singles_sets")
    assert isinstance(enc, SinglesSetsEncoder) and enc.size == layout.SINGLES_SETS.size
    assert len(layout.SINGLES_SETS.feature_names()) == enc.size


@pytest.mark.parametrize("path", RECORDED_BATTLES, ids=lambda p: p.name)
def test_recorded_battles_rich_prefix_unchanged_and_in_bounds(path) -> None:
    rich, singles_sets = SinglesEntitiesEncoder(), SinglesSetsEncoder()
    box = observation_box(singles_sets)
    pairs, _ = replay_decisions(path, lambda b: (rich.encode(b), singles_sets.encode(b)))
    assert pairs
    for v1, v2 in pairs:
        assert np.array_equal(v2[: v1.size], v1)
        assert box.contains(v2)
    tail = np.stack([v2[layout.SIZE :] for _, v2 in pairs])
    assert tail.any(axis=0).sum() > 10  # the new blocks carry information


def test_encoder_writes_futility_and_sets_in_their_slots() -> None:
    me = own_mon("Clefable", moves=("moonblast", "recover", "thunderwave"), active=True)
    battle = make_battle(
        [me], [("Venusaur", 84, 100)], events=("|move|p2a: Venusaur|Leech Seed|p1a: Clefable",)
    )
    vec = SinglesSetsEncoder().encode(battle)
    lay = layout.SINGLES_SETS
    assert vec[lay.index("move_futility", "futile", 0)] == 0.0  # Moonblast
    assert vec[lay.index("move_futility", "user_state", 1)] == 1.0  # Recover at full HP
    assert vec[lay.index("move_futility", "futile", 2)] == 0.0  # Thunder Wave on Venusaur
    assert not vec[lay.index("move_futility", "futile", 3) :][:7].any()  # empty slot
    assert vec[lay.index("opponent_sets", "known", 0)] == 1.0
    assert vec[lay.index("opponent_sets", "sets_left", 0)] == 0.25  # one set left
    steel = vocab.TERA_INDEX[PokemonType.STEEL]
    assert vec[lay.index("opponent_sets", "tera_types", 0, steel)] == 1.0
    assert vec[lay.index("opponent_sets", "known", 1)] == 0.0  # unrevealed slot
