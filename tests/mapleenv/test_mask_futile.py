"""``mask_futile`` in real battles (direct backend): the mask drops the moves that surely
fail and nothing else, the simulator accepts every choice, and off it is the plain mask."""

from __future__ import annotations

import numpy as np
import pytest
from builders import BODY_SLAM, REST, RESTING_SNORLAX, SLEEP_TALK, TERA
from conftest import DirectPokemonEnv
from poke_env.battle import Move

from mapleenv.actions import action_space_size, legal_actions, mask_from_legal
from mapleenv.encoders.features.certain import surely_fails, without_futile

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
        order = getattr(env.legal_orders[action], "order", None)  # singles orders
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


def _double_moves(battle, mask: np.ndarray) -> set[str]:
    """The ids of the moves that masked-in joint actions play, either slot."""
    legal = legal_actions(battle)
    played = set()
    for action in np.flatnonzero(mask):
        joined = legal[int(action)]
        for half in (joined.first_order, joined.second_order):
            if isinstance(half.order, Move):
                played.add(half.order.id)
    return played


@pytest.mark.integration
def test_real_double_battles_mask_only_moves_that_surely_fail() -> None:
    """Doubles (gen9doublesou, Snorlax and Blissey leading at full HP): each slot's Rest,
    Sleep Talk and Soft-Boiled leave the joint mask on the first turn, the rest stays,
    every masked-in joint action is accepted by the simulator, and off it is the plain
    mask."""
    size = action_space_size(9, doubles=True)
    rng = np.random.default_rng(1)
    masked_out = 0
    firsts: dict[str, set[str]] = {}  # battle tag -> the moves its first decision allows

    def check_on(obs, battle) -> None:
        nonlocal masked_out
        plain = mask_from_legal(legal_actions(battle), size)
        expected = mask_from_legal(without_futile(legal_actions(battle), battle), size)
        assert (obs["action_mask"] == expected).all() and (expected <= plain).all()
        masked_out += int(plain.sum() - expected.sum())
        firsts.setdefault(battle.battle_tag, _double_moves(battle, obs["action_mask"]))

    def check_off(obs, battle) -> None:
        assert (obs["action_mask"] == mask_from_legal(legal_actions(battle), size)).all()
        firsts.setdefault(battle.battle_tag, _double_moves(battle, obs["action_mask"]))

    settings = dict(battle_format="gen9doublesou", encoder="doubles", team=TEAM, max_turns=15)
    settings |= dict(seed=5, on_illegal="raise", backend_kwargs={"record": True})
    full_hp_futile = {"rest", "sleeptalk", "softboiled"}
    env = DirectPokemonEnv(mask_futile=True, **settings)
    try:
        for _ in range(2):
            play(env, rng, check_on)
    finally:
        env.close()
    assert len(firsts) == 2 and masked_out > 0
    for moves in firsts.values():
        assert not moves & full_hp_futile and {"bodyslam", "seismictoss"} <= moves, moves
    firsts.clear()
    plain_env = DirectPokemonEnv(**settings)
    try:
        play(plain_env, rng, check_off)
    finally:
        plain_env.close()
    ((moves),) = firsts.values()
    assert full_hp_futile <= moves, moves
