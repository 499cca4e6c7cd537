"""``make_vector_env(backend="direct", sim_hosts=0)``: spawned workers, each with its own
Node host (shared hosts: tests/mapleenv/backends/test_direct_pool.py)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import descendant_node_pids, pid_alive

import mapleenv
import mapleenv.backends.direct  # noqa: F401  (registers the backend in this process)

pytestmark = pytest.mark.integration


def test_two_direct_envs_play_full_episodes_and_leave_no_node_behind() -> None:
    before = set(descendant_node_pids())  # e.g. a session-wide Showdown server
    envs = mapleenv.make_vector_env(2, backend="direct", sim_hosts=0, opponent="random", seed=0)
    hosts: list[int] = []
    try:
        obs, _ = envs.reset()
        hosts = sorted(set(descendant_node_pids()) - before)
        assert len(hosts) == 2  # one simulator host per worker, no server
        rng = np.random.default_rng(0)
        finished: list[tuple[int, bool, str]] = []
        for _ in range(2000):
            legal = obs["action_mask"].astype(bool)
            actions = (rng.random(legal.shape) + legal).argmax(axis=1)
            obs, _, terminated, truncated, info = envs.step(actions)
            for i in np.flatnonzero(terminated | truncated):
                assert terminated[i] and info["_won"][i]
                finished.append((int(i), bool(info["won"][i]), str(info["battle_tag"][i])))
            if {i for i, _, _ in finished} == {0, 1} and len(finished) >= 2:
                break
        assert {i for i, _, _ in finished} == {0, 1}
        assert len({tag for _, _, tag in finished}) == len(finished)
    finally:
        envs.close()
    assert hosts and not any(pid_alive(pid) for pid in hosts)
