"""The richer doubles encoder (``encoder="doubles_calc"``) on real random-doubles battles: every
vector within its bounds, ``doubles``' features first and unchanged, the damage estimate
zero exactly where the type chart says immune, and the encoder refused on singles."""

from __future__ import annotations

import numpy as np
import pytest

from mapleenv import PokemonEnv
from mapleenv.actions.doubles import NUM_MOVE_SLOTS, move_slots
from mapleenv.encoders import make_encoder
from mapleenv.encoders.doubles.basic import DoublesBasicEncoder
from mapleenv.encoders.doubles.calc import BLOCKS, EXTRA_BLOCKS
from mapleenv.encoders.singles.basic import _multiplier

pytestmark = pytest.mark.integration


def _offset(name: str) -> int:
    names = [b.name for b in BLOCKS]
    return sum(b.size for b in BLOCKS[: names.index(name)])


def test_layout_is_doubles_then_the_extra_blocks() -> None:
    encoder = make_encoder("doubles_calc")
    base = DoublesBasicEncoder()
    assert encoder.size == base.size + sum(b.size for b in EXTRA_BLOCKS) == len(encoder.low)
    assert encoder.game_types == ("doubles",)
    with pytest.raises(ValueError, match="encoder 'doubles_calc' reads doubles battles"):
        PokemonEnv("gen9randombattle", "random", encoder="doubles_calc")


@pytest.mark.timeout(300)
def test_real_battles_stay_in_bounds_and_estimates_follow_the_type_chart() -> None:
    encoder, base = make_encoder("doubles_calc"), DoublesBasicEncoder()
    estimate = _offset("move_estimate")
    env = PokemonEnv("gen9randomdoublesbattle", "max_power", encoder="doubles_calc", seed=21)
    rng = np.random.default_rng(0)
    checked = 0
    try:
        for _ in range(3):
            env.reset()
            done = False
            while not done:
                battle = env.battle
                vec = encoder.encode(battle)
                assert np.isfinite(vec).all()
                assert ((vec >= encoder.low) & (vec <= encoder.high)).all()
                np.testing.assert_array_equal(vec[: base.size], base.encode(battle))
                foes = battle.opponent_active_pokemon
                for pos, attacker in enumerate(battle.active_pokemon):
                    if attacker is None:
                        continue
                    for k, move in enumerate(move_slots(battle, pos)):
                        if move.base_power <= 0 or move.category.name == "STATUS":
                            continue
                        for f, foe in enumerate(foes):
                            if foe is None or foe.current_hp_fraction == 0:
                                continue
                            value = vec[estimate + 2 * (pos * NUM_MOVE_SLOTS + k) + f]
                            assert (value == 0) == (_multiplier(move, foe) == 0), move.id
                            checked += 1
                action = rng.choice(np.flatnonzero(env.action_masks()))
                _, _, terminated, truncated, _ = env.step(action)
                done = terminated or truncated
    finally:
        env.close()
    assert checked > 100  # the estimate was read, not skipped
