"""``mapleenv.parallel_env`` on double battles: both seats as PettingZoo agents with the
joint doubles action space, exact masks the simulator never refuses."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test
from poke_env.battle.double_battle import DoubleBattle

import mapleenv
from mapleenv.actions import action_space_size, legal_actions, mask_from_legal

pytestmark = pytest.mark.integration

FORMAT = "gen9randomdoublesbattle"
JOINT = action_space_size(9, doubles=True)


def _doubles_env(**settings) -> mapleenv.multiagent.ShowdownParallelEnv:
    return mapleenv.parallel_env(battle_format=FORMAT, encoder="doubles", **settings)


def test_parallel_api_test_passes_on_doubles_without_warnings():
    env = _doubles_env(seed=0)
    try:
        assert env.action_space("p1").n == env.action_space("p2").n == JOINT == 2209
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            parallel_api_test(env, num_cycles=1000)
    finally:
        env.close()
    assert [str(w.message) for w in caught if "pettingzoo" in w.filename] == []


def test_random_legal_doubles_battles_on_both_seats_are_never_refused():
    """Three battles of random legal joint actions on both seats: every mask is the seat's
    exact joint mask, the simulator refuses no choice of either side, every battle ends."""
    env = _doubles_env(seed=1, on_illegal="raise")
    rng = np.random.default_rng(1)
    decisions = {"p1": 0, "p2": 0}
    refused = {"p1": 0, "p2": 0}
    try:
        for _ in range(3):
            obs, infos = env.reset()
            for _ in range(2000):
                acting = [a for a in env.agents if infos[a]["needs_action"]]
                assert acting, "the battle waits for nobody"
                actions = {}
                for agent in env.agents:
                    battle = env.battles[agent]
                    assert isinstance(battle, DoubleBattle)
                    assert env.observation_space(agent).contains(obs[agent])
                    expected = mask_from_legal(legal_actions(battle), JOINT)
                    if agent in acting and not battle.teampreview:
                        assert np.array_equal(obs[agent]["action_mask"], expected)
                        decisions[agent] += 1
                    mask = np.flatnonzero(obs[agent]["action_mask"])
                    actions[agent] = int(rng.choice(mask))
                session = env._session
                obs, rewards, terms, truncs, infos = env.step(actions)
                assert not any("illegal_action" in info for info in infos.values())
                if terms["p1"]:
                    break
            else:
                raise AssertionError("battle did not end")
            for side, count in session.invalid_choices.items():
                refused[side] += count
            assert terms == {"p1": True, "p2": True} and env.agents == []
            assert rewards["p1"] == -rewards["p2"]
            assert infos["p1"]["turns"] == infos["p2"]["turns"] >= 1
    finally:
        env.close()
    assert refused == {"p1": 0, "p2": 0}
    assert min(decisions.values()) >= 30


def test_a_singles_encoder_on_a_doubles_format_is_one_clear_error():
    with pytest.raises(ValueError, match="encoder 'simple' reads singles battles.*encoder=doubles"):
        mapleenv.parallel_env(battle_format=FORMAT, encoder="simple")
    with pytest.raises(ValueError, match="encoder 'doubles' reads doubles battles"):
        mapleenv.parallel_env(battle_format="gen9randombattle", encoder="doubles")
