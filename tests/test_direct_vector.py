"""``make_vector_env(backend="direct")``: spawned workers, each with its own Node host."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from conftest import pid_alive

import mapleenv
import mapleenv.direct  # noqa: F401  (registers the backend in this process)

pytestmark = pytest.mark.integration


def descendant_node_pids() -> list[int]:
    """Live ``node`` processes anywhere below this process."""
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        names[int(entry.name)] = stat[stat.index("(") + 1: stat.rindex(")")]
        parents[int(entry.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
    me, found = os.getpid(), []
    for pid, name in names.items():
        ancestor = parents.get(pid)
        while ancestor is not None and ancestor not in (me, 0, 1):
            ancestor = parents.get(ancestor)
        if name == "node" and ancestor == me:
            found.append(pid)
    return found


def test_two_direct_envs_play_full_episodes_and_leave_no_node_behind() -> None:
    before = set(descendant_node_pids())  # e.g. a session-wide Showdown server
    envs = mapleenv.make_vector_env(2, backend="direct", plugins=["mapleenv.direct"],
                                    opponent="random", seed=0)
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
