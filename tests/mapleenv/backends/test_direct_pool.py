"""Shared simulator hosts (``SimHostPool``) serving several envs over Unix sockets."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import DirectPokemonEnv, descendant_node_pids, make_direct_vector_env, pid_alive

from mapleenv.backends.direct import SimHostConnection, SimHostPool, claim_host

pytestmark = pytest.mark.integration

START = (
    '>start {"formatid":"gen9randombattle","seed":[1,2,3,%d],'
    '"p1":{"name":"a","seed":[5,6,7,%d]},"p2":{"name":"b","seed":[9,9,9,9]}}'
)


def _first_switch(replies: list[tuple[str, str]]) -> str:
    update = next(data for kind, data in replies if kind == "update")
    return next(line for line in update.split("\n") if line.startswith("|switch|p1a"))


def test_claims_go_round_robin_and_battle_ids_are_private_per_connection() -> None:
    with SimHostPool(2) as pool:
        claims = [claim_host(pool.spec) for _ in range(4)]
        assert [c[0] for c in claims] == [claims[0][0], claims[1][0]] * 2
        assert claims[0][0] != claims[1][0]
        assert {c[1] for c in claims} == {h.pid for h in pool.hosts}
        # Two clients of the same host use the same battle id for different battles.
        with SimHostConnection(*claims[0]) as a, SimHostConnection(*claims[2]) as b:
            switch_a = _first_switch(a.send("1", [START % (1, 1)]))
            switch_b = _first_switch(b.send("1", [START % (2, 2)]))
            assert switch_a == _first_switch(a.send("2", [START % (1, 1)]))  # same seeds
            assert switch_a != switch_b
            assert a.send("1", [">p1 move 1", ">p2 move 1"])  # battle 1 of a goes on


def test_dead_host_is_restarted_and_envs_recover() -> None:
    pool = SimHostPool(1).start()
    try:
        env = DirectPokemonEnv(opponent="random", seed=2, backend_kwargs={"host_pool": pool.spec})
        try:
            obs, _ = env.reset()
            old = pool.hosts[0].pid
            os.kill(old, signal.SIGKILL)
            _, _, terminated, truncated, info = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
            assert truncated and not terminated and "aborted" in info
            # The env can see the socket close a moment before the killed process has
            # exited (poll() still None), so give the restart check a few tries.
            deadline = time.monotonic() + 10
            while pool.ensure_running() == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert pool.restarts == 1 and pool.hosts[0].pid != old
            obs, _ = env.reset()
            env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        finally:
            env.close()
    finally:
        pool.stop()
    assert not pid_alive(old) and pool.directory is None


def test_reset_waits_for_the_watchdog_to_restart_the_only_host() -> None:
    """With one simulator host, a battle start right after the host was killed retries
    with backoff until the pool's watchdog has restarted it (it used to give up after three
    back-to-back attempts, ending the run)."""
    pool = SimHostPool(1).start()
    pool.start_watchdog(interval=0.5)
    try:
        env = DirectPokemonEnv(opponent="random", seed=3, backend_kwargs={"host_pool": pool.spec})
        try:
            env.reset()
            old = pool.hosts[0].pid
            os.kill(old, signal.SIGKILL)
            obs, info = env.reset()  # forfeits the battle on the dead host, then starts anew
            assert pool.restarts >= 1 and pool.hosts[0].pid != old
            env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        finally:
            env.close()
    finally:
        pool.stop()


def test_a_stopped_host_fails_its_health_check_and_is_replaced() -> None:
    """SIGSTOP of the only host: the watchdog's ping times out, the host is killed and
    restarted, the battle in flight is aborted and the next one is played."""
    # 5 s: a restarted host's first battle loads the simulator's data, and a ping waits for
    # it; on a loaded box (CI beside other runs) 2 s killed the new host too, again and again
    pool = SimHostPool(1, health_timeout=5.0).start()
    pool.start_watchdog(interval=0.5)
    try:
        env = DirectPokemonEnv(opponent="random", seed=4, backend_kwargs={"host_pool": pool.spec})
        try:
            obs, _ = env.reset()
            old = pool.hosts[0].pid
            os.kill(old, signal.SIGSTOP)
            _, _, terminated, truncated, info = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
            assert truncated and not terminated and "aborted" in info
            obs, _ = env.reset()
            assert pool.restarts >= 1 and pool.hosts[0].pid != old and not pid_alive(old)
            env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        finally:
            env.close()
    finally:
        pool.stop()


def test_vector_env_on_shared_hosts_plays_and_cleans_up() -> None:
    before = set(descendant_node_pids())  # e.g. a session-wide Showdown server
    envs = make_direct_vector_env(3, sim_hosts=1, opponent="random", seed=1)
    pool = envs.pool
    directory = pool.directory
    try:
        obs, _ = envs.reset()
        hosts = set(descendant_node_pids()) - before
        assert hosts == {pool.hosts[0].pid}  # one shared host, none per worker
        rng = np.random.default_rng(0)
        done = 0
        deadline = time.monotonic() + 240
        while done < 2 and time.monotonic() < deadline:
            legal = obs["action_mask"].astype(bool)
            obs, _, terminated, truncated, info = envs.step(
                (rng.random(legal.shape) + legal).argmax(axis=1)
            )
            for i in np.flatnonzero(terminated | truncated):
                assert terminated[i] and info["_won"][i]
                done += 1
        assert done >= 2
    finally:
        envs.close()
    assert not hosts & set(descendant_node_pids()) and not directory.exists()


def test_stale_socket_dirs_of_dead_trainers_are_removed(tmp_path: Path) -> None:
    """A trainer killed with SIGKILL leaves its maple-sim-* dir; the next pool removes it,
    and only it: a live owner's dir, or a young one still being written, stays."""
    import psutil

    from mapleenv.backends.direct.pool import DIR_PREFIX, OWNER, remove_stale_pool_dirs

    me = psutil.Process()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(timeout=30)

    def pool_dir(name: str, owner: str | None, age_s: float = 0.0) -> Path:
        directory = tmp_path / f"{DIR_PREFIX}{name}"
        directory.mkdir()
        if owner is not None:
            (directory / OWNER).write_text(owner)
        (directory / "host-0.pid").write_text(str(dead.pid))
        then = directory.stat().st_mtime - age_s
        os.utime(directory, (then, then))
        return directory

    live = pool_dir("live", f"{me.pid} {me.create_time():.3f}")
    gone = pool_dir("gone", f"{dead.pid} 1.000")
    reused = pool_dir("reused", f"{me.pid} 1.000")  # our pid, another start time
    young = pool_dir("young", None)
    orphan = pool_dir("orphan", None, age_s=3600)
    other = tmp_path / "not-a-pool"
    other.mkdir()
    removed = remove_stale_pool_dirs(tmp_path)
    assert sorted(removed) == sorted([gone, reused, orphan])
    assert live.is_dir() and young.is_dir() and other.is_dir()
    assert not gone.exists() and not reused.exists() and not orphan.exists()
