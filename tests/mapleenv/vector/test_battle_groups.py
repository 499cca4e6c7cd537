"""Several battles per env worker (mapleenv.vector.group): the same battles, spaces, infos
and calls as one battle per worker, in fewer processes; a killed worker's battles end
aborted and a new worker plays on."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from mapleenv.vector import make_vector_env

pytestmark = [pytest.mark.integration]


def first_legal(obs) -> np.ndarray:
    return obs["action_mask"].astype(bool).argmax(axis=1)


def play(per_worker: int, mode: AutoresetMode, steps: int) -> dict:
    """``steps`` vector steps of 4 envs (first legal action, battles cut at turn 8), checking
    the autoreset contract of ``mode`` on every step; what they saw."""
    envs = make_vector_env(
        4, opponent="random", seed=5, sim_hosts=1, autoreset_mode=mode, max_turns=8,
        battles_per_worker=per_worker,
    )  # fmt: skip
    seen: dict = {"ended": 0, "info_keys": set(), "final_info_keys": set()}
    try:
        assert envs.num_envs == 4 and len(envs.processes) == 4 // per_worker
        obs, info = envs.reset(seed=5)
        assert info["_battle_tag"].all() and len(set(info["battle_tag"])) == 4
        ended = np.zeros(4, dtype=bool)
        for _ in range(steps):
            obs, reward, terminated, truncated, info = envs.step(first_legal(obs))
            assert obs["action_mask"].any(axis=1).all()  # every env has a decision
            if mode == AutoresetMode.NEXT_STEP:  # the step after an end is the reset
                assert not (reward[ended].any() or terminated[ended].any())
                assert "final_obs" not in info
            done = terminated | truncated
            if mode == AutoresetMode.SAME_STEP and done.any():
                assert list(info["_final_obs"]) == list(done)
                seen["final_info_keys"] |= set(info["final_info"])
            seen["ended"] += int(done.sum())
            seen["info_keys"] |= set(info)
            ended = done
        seen["masks"] = envs.action_masks()
        assert seen["masks"].shape == (4, 26) and seen["masks"].dtype == bool
        seen["calls"] = envs.call("set_teacher_active", False)
        envs.set_attr("test_tag", [1, 2, 3, 4])
        seen["set"] = envs.get_attr("test_tag")
        seen["space"] = (envs.single_observation_space, envs.single_action_space)
    finally:
        envs.close()
    return seen


@pytest.mark.parametrize("mode", [AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP])
def test_grouped_workers_keep_the_vector_env_contract(mode: AutoresetMode) -> None:
    grouped = play(2, mode, 60)
    assert grouped["ended"] >= 4  # episodes ended, and the envs went on
    assert grouped["calls"] == (False,) * 4 and grouped["set"] == (1, 2, 3, 4)
    if mode == AutoresetMode.SAME_STEP:  # what one battle per worker gives, the same
        one = play(1, mode, 30)
        assert one["space"] == grouped["space"]
        assert one["info_keys"] <= grouped["info_keys"]
        assert grouped["final_info_keys"] >= {"won", "battle_tag", "turns", "_turns"}


def test_battles_per_worker_must_divide_num_envs() -> None:
    with pytest.raises(ValueError, match="battles_per_worker must be >= 1 and divide num_envs=4"):
        make_vector_env(4, opponent="random", battles_per_worker=3)


def test_a_killed_group_worker_is_replaced_and_its_battles_end_aborted() -> None:
    envs = make_vector_env(
        4, opponent="random", seed=3, sim_hosts=1, autoreset_mode="SameStep",
        battles_per_worker=2,
    )  # fmt: skip
    try:
        obs, _ = envs.reset(seed=3)
        obs, *_ = envs.step(first_legal(obs))
        old = envs.processes[1]
        os.kill(old.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while old.is_alive() and time.monotonic() < deadline:
            old.join(0.1)
        obs, reward, terminated, truncated, info = envs.step(first_legal(obs))
        assert list(truncated) == [False, False, True, True] and not terminated[2:].any()
        final = info["final_info"]
        assert list(final["_aborted"]) == [False, False, True, True]
        assert "env worker 1 replaced: its process ended" in str(final["aborted"][2])
        assert info["final_obs"][3]["action_mask"].any()  # the battle's last observation
        assert envs.replaced_workers == [2, 3]
        for _ in range(20):  # all four play on, the new worker's battles included
            obs, *_ = envs.step(first_legal(obs))
        assert obs["action_mask"].any(axis=1).all()
    finally:
        envs.close()
