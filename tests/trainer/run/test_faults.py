"""Faults during training with real processes: a killed env worker stops the run cleanly; a
hung Showdown server is killed and restarted while the run goes on."""

from __future__ import annotations

import csv
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[3]
# iterations of the runs that must finish: the fault comes after the first, and the run
# cannot finish without the recovery (its one env waits), so a few more show that it goes on
ITERATIONS = 6


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
    run_dir: Path, *overrides: str, total_steps: int = 1_000_000
) -> subprocess.Popen:
    """The smoke run (one env) with ``overrides``, returned once an iteration is logged."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trainer",
            "+experiment=smoke",
            f"total_steps={total_steps}",
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


def _aborted(run_dir: Path) -> tuple[int, int]:
    """(iterations logged, battles aborted) of a run's metrics.csv."""
    with (run_dir / "metrics.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    return len(rows), sum(int(r["episodes_aborted"]) for r in rows)


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_killed_env_worker_is_replaced_and_the_run_finishes(tmp_path: Path) -> None:
    """SIGKILL of the env worker: a new worker takes its place within the step, its battle
    counts as aborted, and the run reaches total_steps; nothing is left running."""
    proc = _start_training(tmp_path, total_steps=32 * ITERATIONS)
    (worker,) = _env_workers(proc.pid)
    os.kill(worker.pid, signal.SIGKILL)
    descendants = psutil.Process(proc.pid).children(recursive=True)
    out = _finish(proc)
    assert proc.returncode == 0, out[-3000:]
    # its pipe may close before its exit is seen: either is the same fault
    assert re.search(
        r"env worker 0 failed \((its process ended|its pipe closed).*\): replacing", out
    )
    assert f"done: {32 * ITERATIONS} steps" in out and "Traceback" not in out, out[-3000:]
    assert _aborted(tmp_path) == (ITERATIONS, 1)  # every iteration; the battle in flight aborted
    _, alive = psutil.wait_procs(descendants, timeout=30)  # nothing left running
    assert not alive, [p.pid for p in alive]


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_stopped_env_worker_is_logged_then_replaced(tmp_path: Path) -> None:
    """SIGSTOP of the worker: a stall line after 10 s, then at env.step_timeout_s the
    stopped worker is killed (not leaked) and replaced, and the run finishes."""
    proc = _start_training(tmp_path, "env.step_timeout_s=15", total_steps=32 * ITERATIONS)
    (worker,) = _env_workers(proc.pid)
    worker.suspend()  # SIGSTOP
    descendants = psutil.Process(proc.pid).children(recursive=True)
    out = _finish(proc)
    assert proc.returncode == 0, out[-3000:]
    assert "env step stalled for over 10 s: worker(s) [0] silent" in out, out[-3000:]
    assert "env worker 0 failed (it did not answer a step within 15 s): replacing it" in out
    assert f"done: {32 * ITERATIONS} steps" in out, out[-3000:]
    assert not worker.is_running()
    _, alive = psutil.wait_procs(descendants, timeout=30)
    assert not alive, [p.pid for p in alive]


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_stopped_showdown_server_is_restarted_and_the_run_finishes(tmp_path: Path) -> None:
    """SIGSTOP of the run's server: its health check kills and restarts it (a new pid), the
    run reaches total_steps, nothing is left running."""
    proc = _start_training(tmp_path, "env.backend=server", total_steps=32 * ITERATIONS)
    (server,) = _showdown_servers(proc.pid)
    server.suspend()  # SIGSTOP; the run cannot finish before the restart: its env waits
    deadline = time.monotonic() + 120
    while not (new := [s for s in _showdown_servers(proc.pid) if s.pid != server.pid]):
        assert proc.poll() is None and time.monotonic() < deadline, "no new server"
        time.sleep(0.2)
    descendants = psutil.Process(proc.pid).children(recursive=True)
    out = _finish(proc)
    assert proc.returncode == 0, out[-3000:]
    # (poke-env logs the dropped connection with a traceback in the worker: not a failure)
    assert "is hung; killing it to restart it" in out, out[-3000:]
    assert f"done: {32 * ITERATIONS} steps" in out, out[-3000:]
    assert not server.is_running() and new[0].pid != server.pid
    with (tmp_path / "metrics.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == ITERATIONS  # every iteration, through total_steps
    # the battle in flight, unless the stop caught the env between two battles
    assert sum(int(r["episodes_aborted"]) for r in rows) in (0, 1)
    _, alive = psutil.wait_procs(descendants, timeout=30)
    assert not alive, [(p.pid, p.name()) for p in alive]


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
