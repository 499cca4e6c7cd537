"""Faults during training that end the run, with real processes: a server that cannot be
restarted stops it with one line; so does a dead worker of a plain Gymnasium env (only
Showdown envs replace theirs); a trainer killed with SIGKILL takes its workers, hosts and
servers with it. (Faults the run recovers from, a killed or stopped env worker, simulator
host or server, are the chaos run's: tests/scripts/test_chaos.py, on both backends.)"""

from __future__ import annotations

import csv
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[3]


def _rows(path: Path) -> int:
    try:
        with path.open(newline="") as f:
            return len(list(csv.DictReader(f)))
    except OSError:
        return 0


def _env_workers(pid: int) -> list[psutil.Process]:
    """The trainer's AsyncVectorEnv workers (spawned Python children)."""
    workers = []
    for child in psutil.Process(pid).children():
        try:
            cmdline = " ".join(child.cmdline())
        except psutil.Error:
            continue
        if "spawn_main" in cmdline and "resource_tracker" not in cmdline:
            workers.append(child)
    return workers


def _showdown_servers(pid: int) -> list[psutil.Process]:
    """The Showdown servers a trainer started (node processes below it)."""
    servers = []
    for child in psutil.Process(pid).children(recursive=True):
        try:
            if child.name() == "node" and "pokemon-showdown" in child.cmdline():
                servers.append(child)
        except psutil.Error:
            continue
    return servers


def _start_training(
    run_dir: Path, *overrides: str, experiment: str = "+experiment=smoke"
) -> subprocess.Popen:
    """A run of ``experiment`` (the smoke run, one env, by default) with ``overrides``,
    returned once an iteration is logged."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trainer",
            experiment,
            "total_steps=1000000",
            "tensorboard=false",
            f"hydra.run.dir={run_dir}",
            *overrides,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 200
    while _rows(run_dir / "metrics.csv") < 1:  # training is under way
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"no iteration logged: {proc.communicate()[0][-3000:]}")
        time.sleep(0.2)
    return proc


def _finish(proc: subprocess.Popen) -> str:
    """Wait for the run to end by itself (killing it past a deadline); its output."""
    try:
        return proc.communicate(timeout=120)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _take_port(trainer_pid: int, port: int) -> socket.socket:
    """Kill the run's server and listen on its port. A restart may get there first: its
    server is killed too and the port tried again, until the test holds it."""
    deadline = time.monotonic() + 60
    while True:
        servers = _showdown_servers(trainer_pid)
        for server in servers:
            server.kill()
        psutil.wait_procs(servers, timeout=30)
        taken = socket.socket()
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            taken.bind(("127.0.0.1", port))
            taken.listen()
            return taken
        except OSError:
            taken.close()
            assert time.monotonic() < deadline, f"port {port} was never free for the test"


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_server_that_cannot_restart_stops_the_run_with_one_line(tmp_path: Path) -> None:
    """The run's server dies and another program takes its port: the watchdog gives up after
    a few backed-off tries (~15 s) and the run stops at once with one line naming the port,
    its holder and the checkpoint (it used to retry every second while the env waited)."""
    proc = _start_training(tmp_path, "env.backend=server")
    (server,) = _showdown_servers(proc.pid)
    port = next(c.laddr.port for c in server.net_connections("tcp") if c.status == "LISTEN")
    descendants = psutil.Process(proc.pid).children(recursive=True)
    with _take_port(proc.pid, port):
        out = _finish(proc)
    assert proc.returncode == 1, out[-3000:]
    last = out.strip().splitlines()[-1]  # the run's own last word: one line, no traceback
    assert "[trainer][ERROR] - maple-server-watchdog gave up after 5 failed restarts" in last
    assert f"port {port} on 127.0.0.1 is already in use (by pid {os.getpid()}" in last
    assert f"resume={tmp_path}" in last, out[-3000:]
    # (the worker's poke-env client logs its lost connection with a traceback: not ours)
    assert f'File "{ROOT / "trainer"}' not in out, out[-3000:]
    assert (tmp_path / "checkpoints" / "last.pt").is_file()
    _, alive = psutil.wait_procs(descendants, timeout=30)
    assert not alive, [(p.pid, p.name()) for p in alive]


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_dead_worker_of_a_plain_gym_env_stops_the_run_with_its_checkpoint(
    tmp_path: Path,
) -> None:
    """docs/reliability.md: plain Gymnasium envs (``env=gym``, async) do not replace a dead
    worker; the run stops with one line naming it and the checkpoint, and nothing is left."""
    proc = _start_training(
        tmp_path,
        *("env.id=CartPole-v1", "env.vectorization=async", "env.num_envs=2", "device=cpu"),
        experiment="env=gym",
    )
    workers = [
        p
        for p in psutil.Process(proc.pid).children()
        if "resource_tracker" not in " ".join(p.cmdline())
    ]
    assert len(workers) == 2, [p.cmdline() for p in workers]
    descendants = psutil.Process(proc.pid).children(recursive=True)
    victim = workers[1]
    victim.kill()
    out = _finish(proc)
    assert proc.returncode == 1, out[-3000:]
    last = out.strip().splitlines()[-1]  # one line, no traceback
    assert "[trainer][ERROR] - env worker " in last
    assert f"(pid {victim.pid}, exit code -9) ended during a step" in last
    assert f"last checkpoint: {tmp_path / 'checkpoints' / 'last.pt'}" in last
    assert f"resume={tmp_path}" in last, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    assert (tmp_path / "checkpoints" / "last.pt").is_file()
    _, alive = psutil.wait_procs(descendants, timeout=10)
    assert not alive, [(p.pid, p.name()) for p in alive]


@pytest.mark.integration
@pytest.mark.timeout(300)
@pytest.mark.parametrize("backend", ["direct", "server"])
def test_a_trainer_killed_with_sigkill_leaves_nothing_running(tmp_path: Path, backend: str) -> None:
    """Env workers, simulator hosts and servers die with the trainer (PDEATHSIG), within
    seconds (server-backend workers used to wait up to a minute on their connection)."""
    proc = _start_training(tmp_path, f"env.backend={backend}")
    descendants = psutil.Process(proc.pid).children(recursive=True)
    assert _env_workers(proc.pid)
    proc.kill()
    proc.communicate()
    _, alive = psutil.wait_procs(descendants, timeout=10)
    assert not alive, [(p.pid, p.name()) for p in alive]


@pytest.mark.integration
def test_building_a_vector_env_leaves_the_parent_without_pdeathsig() -> None:
    """Gymnasium builds one env in the parent for the spaces: the workers' PDEATHSIG must
    not be set there (a trainer started from a shell that exits was killed with it)."""
    import ctypes

    from mapleenv import make_vector_env

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    envs = make_vector_env(1, opponent="random", backend="direct", sim_hosts=1)
    try:
        signal_number = ctypes.c_int(-1)
        assert prctl(2, ctypes.byref(signal_number)) == 0  # PR_GET_PDEATHSIG
        assert signal_number.value == 0
    finally:
        envs.close()
