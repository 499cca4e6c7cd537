"""``mask_futile`` in real battles (direct backend): the mask drops the moves that surely
fail and nothing else, the simulator accepts every choice, and off it is the plain mask."""

from __future__ import annotations

import numpy as np
import pytest
from builders import BODY_SLAM, REST, RESTING_SNORLAX, SLEEP_TALK, TERA
from conftest import DirectPokemonEnv
from poke_env.battle import Move

from mapleenv.actions import legal_actions, mask_from_legal
from mapleenv.encoders.rich.certain import surely_fails, without_futile

# Snorlax leads at full HP, awake: Rest and Sleep Talk surely fail on the first turn
TEAM = (
    RESTING_SNORLAX
    + """
Blissey @ Heavy-Duty Boots
Ability: Natural Cure
Tera Type: Fairy
EVs: 252 HP / 252 Def / 4 SpD
Bold Nature
- Soft-Boiled
- Seismic Toss
- Thunder Wave
- Stealth Rock
"""
)


def play(env, rng, check) -> np.ndarray:
    """One battle of random masked actions; ``check(obs, battle)`` at every decision.
    Returns the first decision's mask."""
    obs, _ = env.reset()
    first = obs["action_mask"].copy()
    while True:
        check(obs, env.battle)
        action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        order = env.legal_orders[action].order
        if isinstance(order, Move) and env.env_spec.mask_futile:
            # never one that surely fails, unless every legal order does (the game must
            # get a choice: the mask then falls back to the plain one)
            legal = legal_actions(env.battle)
            assert not surely_fails(env.battle, order) or without_futile(legal, env.battle) is legal
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            assert "aborted" not in info and "illegal_action" not in info, info
            assert env._backend.session.invalid_choices == {"p1": 0, "p2": 0}
            return first


@pytest.mark.integration
def test_real_battles_mask_only_moves_that_surely_fail() -> None:
    rng = np.random.default_rng(0)
    masked_out = 0

    def check_on(obs, battle) -> None:
        nonlocal masked_out
        plain = mask_from_legal(legal_actions(battle), 26)
        expected = mask_from_legal(without_futile(legal_actions(battle), battle), 26)
        assert (obs["action_mask"] == expected).all() and (expected <= plain).all()
        masked_out += int(plain.sum() - expected.sum())

    def check_off(obs, battle) -> None:
        assert (obs["action_mask"] == mask_from_legal(legal_actions(battle), 26)).all()

    settings = dict(battle_format="gen9ou", team=TEAM, max_turns=25, seed=7, on_illegal="raise")
    env = DirectPokemonEnv(mask_futile=True, backend_kwargs={"record": True}, **settings)
    try:
        for _ in range(2):
            first = play(env, rng, check_on)
            assert not first[[REST, SLEEP_TALK, REST + TERA]].any() and first[BODY_SLAM]
    finally:
        env.close()
    assert masked_out >= 4  # the first turns alone: Rest and Sleep Talk, plain and Tera
    plain_env = DirectPokemonEnv(backend_kwargs={"record": True}, **settings)
    try:
        first = play(plain_env, rng, check_off)
        assert first[[REST, SLEEP_TALK, REST + TERA]].all()
    finally:
        plain_env.close()
