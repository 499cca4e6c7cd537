"""make_vector_env: spawned AsyncVectorEnv workers on a pool of real Showdown servers."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest
from conftest import child_node_pids, pid_alive
from gymnasium.vector import AutoresetMode

from mapleenv.vector import BACKEND_ENV_VAR, default_backend, make_vector_env


def _greedy(obs, rng):
    actions = []
    for features, mask in zip(obs["observation"], obs["action_mask"], strict=True):
        moves = np.flatnonzero(mask[6:10])
        if len(moves):
            actions.append(6 + int(moves[np.argmax(features[82:86][moves])]))
        else:
            actions.append(int(rng.choice(np.flatnonzero(mask))))
    return np.array(actions)


def _maps(pid: int) -> str:
    with open(f"/proc/{pid}/maps") as f:
        return f.read()


@pytest.mark.integration
def test_two_envs_play_full_episodes_and_survive_a_server_crash(tmp_path):
    before = set(child_node_pids())
    envs = make_vector_env(
        2,
        backend="server",
        servers=2,
        log_dir=tmp_path,
        seed=0,
        autoreset_mode=AutoresetMode.SAME_STEP,
    )
    rng = np.random.default_rng(0)
    finished: list[tuple[int, dict]] = []

    def run_until(condition, limit: int = 3000):
        nonlocal obs
        for _ in range(limit):
            obs, _, terminated, truncated, info = envs.step(_greedy(obs, rng))
            assert obs["observation"].shape == (2, 116) and obs["action_mask"].shape == (2, 26)
            assert obs["action_mask"].any(axis=1).all()
            for i in np.flatnonzero(terminated | truncated):
                final = info["final_info"]
                finished.append(
                    (
                        int(i),
                        {
                            k: final[k][i]
                            for k in final
                            if not k.startswith("_") and final[f"_{k}"][i]
                        },
                    )
                )
            if condition():
                return
        raise AssertionError("condition not reached")

    try:
        servers = [server.pid for server in envs.pool]
        assert len(set(servers)) == 2 and set(servers) <= set(child_node_pids())
        obs, info = envs.reset(seed=0)
        assert obs["observation"].dtype == np.float32 and obs["action_mask"].dtype == np.int8
        run_until(lambda: {i for i, _ in finished} == {0, 1})
        assert all(isinstance(f["won"], (bool, np.bool_)) for _, f in finished)
        assert all(f["battle_tag"].startswith("battle-gen9randombattle-") for _, f in finished)
        # workers import mapleenv only: no torch (hence no CUDA) in them
        assert envs.processes
        for process in envs.processes:
            assert "libtorch" not in _maps(process.pid)

        # kill env 1's server mid-battle: its episode aborts, the watchdog restarts the
        # server on the same port and the env reconnects on autoreset
        victim = envs.pool.servers[1]
        os.kill(victim.pid, signal.SIGKILL)
        run_until(lambda: any("aborted" in f for _, f in finished))
        aborted = [i for i, f in finished if "aborted" in f]
        assert aborted == [1] and victim.restarts == 1
        count = len(finished)
        run_until(lambda: any(i == 1 for i, _ in finished[count:]))
        assert "won" in [f for i, f in finished[count:] if i == 1][0]
        workers = [p.pid for p in envs.processes]
        servers = [server.pid for server in envs.pool]
    finally:
        envs.close()
    deadline = time.monotonic() + 10  # close() returns once they were told to stop
    while any(pid_alive(pid) for pid in servers + workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(pid_alive(pid) for pid in servers + workers)
    assert set(child_node_pids()) <= before
    assert envs.pool is None


def test_unknown_backend_and_bad_sizes():
    with pytest.raises(NotImplementedError, match="backend 'nonexistent'"):
        make_vector_env(2, backend="nonexistent")
    with pytest.raises(ValueError):
        make_vector_env(0)
    with pytest.raises(ValueError, match="unknown reward key"):
        make_vector_env(1, reward={"nope": 1})
    with pytest.raises(ValueError, match="needs backend='server'"):
        make_vector_env(1, backend="direct", server_url="127.0.0.1:8000")
    with pytest.raises(ValueError, match="sim_hosts"):
        make_vector_env(1, backend="direct", sim_hosts=-1)


def test_default_backend_is_direct_unless_a_server_is_named(monkeypatch):
    monkeypatch.delenv(BACKEND_ENV_VAR, raising=False)
    assert default_backend() == "direct"
    assert default_backend("ws://example.org:8000") == "server"
    monkeypatch.setenv(BACKEND_ENV_VAR, "server")
    assert default_backend() == "server"
