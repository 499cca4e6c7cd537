"""The doubles entity encoder (``encoder="doubles_entities"``) on real random-doubles battles: every
vector within its bounds, ``doubles_calc``'s vector first and unchanged, one block per known
Pokémon with the active slots marked on the right ones, and one block per move slot of our
actives carrying ``doubles_calc``'s damage estimate."""

from __future__ import annotations

import numpy as np
import pytest

from mapleenv import PokemonEnv
from mapleenv.actions.doubles import NUM_MOVE_SLOTS, move_slots
from mapleenv.encoders import make_encoder
from mapleenv.encoders.doubles.entities import _ESTIMATE, LAYOUT, TEAM

pytestmark = pytest.mark.integration

POKEMON = LAYOUT.block("own_team")
MOVE = LAYOUT.block("moves")


def _pokemon(vec: np.ndarray, block: str, i: int, feature: str, size: int = 1) -> np.ndarray:
    start = LAYOUT.index(block, feature, rep=i)
    return vec[start : start + size]


def _check(vec: np.ndarray, battle, context: np.ndarray) -> int:
    np.testing.assert_array_equal(vec[: context.size], context)
    team = list(battle.team.values())
    opponents = list(battle.opponent_team.values())
    for block, mons, actives in (
        ("own_team", team, battle.active_pokemon),
        ("opponent_team", opponents, battle.opponent_active_pokemon),
    ):
        present = [float(_pokemon(vec, block, i, "present")[0]) for i in range(TEAM)]
        assert present == [1.0] * len(mons) + [0.0] * (TEAM - len(mons))
        for pos, active in enumerate(actives):
            marked = [i for i in range(TEAM) if _pokemon(vec, block, i, "slot", 2)[pos] == 1]
            assert marked == ([] if active is None else [mons.index(active)]), (block, pos)
    moves = 0
    for pos in range(2):
        slots = move_slots(battle, pos) if battle.active_pokemon[pos] is not None else []
        for k in range(NUM_MOVE_SLOTS):
            column = pos * NUM_MOVE_SLOTS + k
            assert vec[LAYOUT.index("moves", "present", rep=column)] == (k < len(slots))
            damage = LAYOUT.index("moves", "damage", rep=column)
            estimate = context[_ESTIMATE + 2 * column : _ESTIMATE + 2 * column + 2]
            np.testing.assert_array_equal(vec[damage : damage + 2], estimate)
            moves += k < len(slots)
    return moves


@pytest.mark.timeout(300)
def test_real_battles_fill_the_entity_blocks_within_bounds() -> None:
    encoder, context = make_encoder("doubles_entities"), make_encoder("doubles_calc")
    assert encoder.size == LAYOUT.size == context.size + 12 * POKEMON.width + 8 * MOVE.width
    assert encoder.game_types == ("doubles",)
    env = PokemonEnv("gen9randomdoublesbattle", "max_power", encoder="doubles_entities", seed=5)
    rng = np.random.default_rng(0)
    moves = decisions = 0
    try:
        for _ in range(3):
            obs, _ = env.reset()
            done = False
            while not done:
                battle = env.battle
                vec = encoder.encode(battle)
                assert np.isfinite(vec).all()
                assert ((vec >= encoder.low) & (vec <= encoder.high)).all()
                np.testing.assert_array_equal(vec, obs["observation"])
                moves += _check(vec, battle, context.encode(battle))
                decisions += 1
                action = rng.choice(np.flatnonzero(env.action_masks()))
                obs, _, terminated, truncated, _ = env.step(action)
                done = terminated or truncated
    finally:
        env.close()
    assert decisions > 20 and moves > 4 * decisions  # most decisions see both actives' moves


def test_it_reads_doubles_only() -> None:
    with pytest.raises(ValueError, match="encoder 'doubles_entities' reads doubles battles"):
        PokemonEnv("gen9randombattle", "random", encoder="doubles_entities")
