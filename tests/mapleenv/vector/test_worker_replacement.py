"""A dead or hung env worker is replaced within the step (mapleenv.vector.heal): its battle
ends aborted, the other envs go on, and only repeated failures stop the vector env."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import psutil
import pytest

from mapleenv.vector import EnvWorkersFailing, make_vector_env

# on the default (direct) backend only: the replacement logic does not depend on it, and a
# killed or stopped worker on Showdown servers is the chaos run's, which the CI's server pass
# repeats (tests/scripts/test_chaos.py)
pytestmark = pytest.mark.integration


def legal_actions(envs, obs, rng) -> np.ndarray:
    masks = obs["action_mask"].astype(bool)
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks])


def wait_dead(process, deadline_s: float = 30.0) -> None:
    deadline = time.monotonic() + deadline_s
    while process.is_alive() and time.monotonic() < deadline:
        process.join(0.1)
    assert not process.is_alive()


def aborted(info, i: int) -> str | None:
    final = info.get("final_info", {})
    if "aborted" not in final or not final["_aborted"][i]:
        return None
    return str(final["aborted"][i])


def test_a_killed_worker_is_replaced_and_its_battle_ends_aborted():
    rng = np.random.default_rng(0)
    envs = make_vector_env(2, opponent="random", seed=3, autoreset_mode="SameStep")
    try:
        obs, _ = envs.reset(seed=3)
        obs, *_ = envs.step(legal_actions(envs, obs, rng))
        old = envs.processes[0]
        os.kill(old.pid, signal.SIGKILL)
        wait_dead(old)
        obs, reward, terminated, truncated, info = envs.step(legal_actions(envs, obs, rng))
        assert truncated[0] and not terminated[0] and reward[0] == 0.0
        assert "env worker 0 replaced: its process ended" in aborted(info, 0)
        assert aborted(info, 1) is None
        assert info["final_obs"][0]["action_mask"].any()  # the last observation it had
        assert envs.processes[0].pid != old.pid and envs.processes[0].is_alive()
        assert envs.replaced_workers == [0]
        for _ in range(30):  # both envs play on, the new worker's battle included
            obs, *_ = envs.step(legal_actions(envs, obs, rng))
        assert obs["action_mask"].any(axis=1).all()
    finally:
        envs.close()


def test_a_stopped_worker_is_killed_and_replaced_after_the_timeout():
    rng = np.random.default_rng(1)
    envs = make_vector_env(
        2, opponent="random", seed=5, autoreset_mode="SameStep", worker_timeout_s=3.0
    )
    try:
        obs, _ = envs.reset(seed=5)
        stopped = envs.processes[1]
        os.kill(stopped.pid, signal.SIGSTOP)
        start = time.monotonic()
        obs, _, _, truncated, info = envs.step(legal_actions(envs, obs, rng))
        assert time.monotonic() - start < 60
        assert truncated[1] and "did not answer a step within 3 s" in aborted(info, 1)
        wait_dead(stopped)
        assert not psutil.pid_exists(stopped.pid) or (
            psutil.Process(stopped.pid).status() == psutil.STATUS_ZOMBIE
        )
        obs, *_ = envs.step(legal_actions(envs, obs, rng))
        assert obs["action_mask"].any(axis=1).all()
    finally:
        envs.close()


def test_a_worker_failing_again_and_again_stops_the_vector_env_with_one_line():
    rng = np.random.default_rng(2)
    envs = make_vector_env(
        1, opponent="random", seed=7, autoreset_mode="SameStep", max_worker_failures=2
    )
    try:
        obs, _ = envs.reset(seed=7)
        os.kill(envs.processes[0].pid, signal.SIGKILL)
        wait_dead(envs.processes[0])
        obs, *_ = envs.step(legal_actions(envs, obs, rng))  # the first: replaced
        os.kill(envs.processes[0].pid, signal.SIGKILL)
        wait_dead(envs.processes[0])
        with pytest.raises(EnvWorkersFailing, match=r"\[0\] failed 2 times in a row") as failure:
            envs.step(legal_actions(envs, obs, rng))
        assert "\n" not in str(failure.value)
    finally:
        envs.close()


def crash_once_then_env(marker: str, env_fn):
    """An env factory whose first start (in a fresh process) dies, the next ones work."""
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(3)
    return env_fn()


def always_crash():
    os._exit(3)


def test_a_replacement_that_dies_while_starting_is_tried_again(tmp_path):
    import functools

    rng = np.random.default_rng(3)
    envs = make_vector_env(1, opponent="random", seed=9, autoreset_mode="SameStep")
    try:
        obs, _ = envs.reset(seed=9)
        marker = str(tmp_path / "crashed-once")
        envs.env_fns[0] = functools.partial(crash_once_then_env, marker, envs.env_fns[0])
        os.kill(envs.processes[0].pid, signal.SIGKILL)
        wait_dead(envs.processes[0])
        obs, _, _, truncated, info = envs.step(legal_actions(envs, obs, rng))
        assert os.path.exists(marker)  # the first replacement died while starting
        assert truncated[0] and "replaced" in aborted(info, 0)
        obs, *_ = envs.step(legal_actions(envs, obs, rng))  # the second one plays
        assert obs["action_mask"].any()
        envs.env_fns[0] = always_crash
        os.kill(envs.processes[0].pid, signal.SIGKILL)
        wait_dead(envs.processes[0])
        with pytest.raises(EnvWorkersFailing, match="3 replacement.s. in a row failed"):
            envs.step(legal_actions(envs, obs, rng))
    finally:
        envs.close()
