"""SinglesBasicEncoder on hand-built and recorded battles, and the encoder registry (no server)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import RECORDED_BATTLES, replay_decisions, synthetic_battle
from poke_env.battle.pokemon_type import PokemonType
from poke_env.battle.status import Status

from mapleenv.encoders import (
    ENCODERS,
    SinglesBasicEncoder,
    check_game_type,
    make_encoder,
    observation_box,
    register_encoder,
)
from mapleenv.encoders.singles.basic import BOOSTS, TYPES


def _pikachu_vs_gyarados():
    return synthetic_battle(
        [
            ("Pikachu", 50, "50/100 par", ["thunderbolt", "quickattack"]),
            ("Snorlax", 80, "0 fnt", ["bodyslam"]),
            ("Eevee", 50, "100/100", ["tackle"]),
        ],
        opponent_messages=[
            ["switch", "p2a: Gyarados", "Gyarados, L80, M", "100/100"],
            ["-damage", "p2a: Gyarados", "40/100"],
            ["-status", "p2a: Gyarados", "brn"],
            ["-boost", "p1a: Pikachu", "spa", "2"],
        ],
    )


def test_simple_encoder_hand_worked_vector():
    encoder = SinglesBasicEncoder()
    own = [0.5, 1, 0, 0, 0, 1, 1, 0, 0] + [0] * 9  # hp, active, fainted x6
    opp = [0.4, 1, 1, 0] + [1, 0, 0, 0] * 5  # unseen count as full HP
    types = np.zeros(2 * len(TYPES))
    types[TYPES.index(PokemonType.ELECTRIC)] = 1
    types[len(TYPES) + TYPES.index(PokemonType.WATER)] = 1
    types[len(TYPES) + TYPES.index(PokemonType.FLYING)] = 1
    moves = [0.9 * 4, 0.4 * 1, 0, 0]  # Thunderbolt 4x, Quick Attack 1x
    boosts = np.zeros(2 * len(BOOSTS))
    boosts[BOOSTS.index("spa")] = 2 / 6
    status = np.zeros(2 * len(Status))
    status[list(Status).index(Status.PAR)] = 1
    status[len(Status) + list(Status).index(Status.BRN)] = 1
    expected = np.concatenate([own, opp, types, moves, boosts, status, [1 / 6, 0]])
    out = encoder.encode(_pikachu_vs_gyarados())
    assert out.dtype == np.float32 and out.shape == (encoder.size,) == (116,)
    np.testing.assert_allclose(out, expected, atol=1e-6)


def test_recorded_battles_encode_inside_the_box():
    encoder = SinglesBasicEncoder()
    box = observation_box(encoder)
    assert RECORDED_BATTLES
    for path in RECORDED_BATTLES:
        vectors, _ = replay_decisions(path, encoder.encode)
        assert vectors
        for vector in vectors:
            assert box.contains(vector)
        # the battle changes, and so does its encoding
        assert len({v.tobytes() for v in vectors}) > len(vectors) // 2


def test_registry_by_name_module_path_and_instance():
    assert isinstance(make_encoder("singles_basic"), SinglesBasicEncoder)
    assert isinstance(make_encoder("mapleenv.encoders:SinglesBasicEncoder"), SinglesBasicEncoder)
    instance = SinglesBasicEncoder()
    assert make_encoder(instance) is instance

    class Tiny:
        size = 1
        low = np.zeros(1, np.float32)
        high = np.ones(1, np.float32)

        def encode(self, battle):
            return np.array([battle.turn > 0], dtype=np.float32)

    register_encoder("tiny-test", Tiny)
    try:
        assert isinstance(make_encoder("tiny-test"), Tiny)
    finally:
        ENCODERS.pop("tiny-test")
    with pytest.raises(ValueError, match="unknown encoder 'nope'.*singles_basic"):
        make_encoder("nope")
    with pytest.raises(TypeError):
        make_encoder(object())


def test_an_encoder_of_the_other_game_names_every_registered_one_that_fits():
    """The one line for a singles encoder on a doubles format (or the reverse) lists the
    encoders that read that game, a plugin's among them (its ``game_types``)."""

    class PluginDoubles:
        game_types = ("doubles",)

    register_encoder("plugin-doubles-test", PluginDoubles)
    try:
        with pytest.raises(ValueError) as doubles:
            check_game_type(SinglesBasicEncoder(), "singles_basic", "gen9randomdoublesbattle")
        with pytest.raises(ValueError) as singles:
            check_game_type(PluginDoubles(), "plugin-doubles-test", "gen9randombattle")
    finally:
        ENCODERS.pop("plugin-doubles-test")
    assert str(doubles.value).endswith(
        "is a doubles format: use encoder=doubles_basic, doubles_calc, doubles_entities or "
        "plugin-doubles-test"
    )
    assert str(singles.value).endswith(
        "is a singles format: use encoder=singles_basic, singles_entities or singles_sets"
    )
