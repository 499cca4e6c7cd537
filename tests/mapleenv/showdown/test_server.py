"""Showdown server management: config writing, lookup errors, real process lifecycle."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from conftest import child_node_pids, pid_alive

from mapleenv.showdown import (
    NodeNotFoundError,
    ServerPool,
    ServerStartError,
    ShowdownError,
    ShowdownNotInstalledError,
    ShowdownServer,
    external_server,
    find_node,
    find_showdown,
    port_is_open,
    prepare_server_dir,
)
from mapleenv.showdown.package import listens_on
from mapleenv.showdown.server import PRELOAD

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def no_new_node():
    """Fail if the test leaves a new child Node process behind."""
    before = set(child_node_pids())
    yield
    assert set(child_node_pids()) <= before


def _wait(predicate, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


# ----------------------------------------------------------------------------- unit


@pytest.mark.integration  # runs node
def test_config_is_config_example_plus_overrides(tmp_path):
    directory = prepare_server_dir(tmp_path / "srv", 8123, overrides={"subprocesses": 1})
    script = (
        "const c = require(process.argv[1]); console.log(JSON.stringify({port: c.port, "
        "bind: c.bindaddress, nothrottle: c.nothrottle, sub: c.subprocesses, "
        "logchat: c.logchat, stats: c.loguserstats, repl: c.repl, crashguard: c.crashguard, "
        "example: Array.isArray(c.grouplist)}))"
    )
    out = subprocess.run(
        [find_node(), "-e", script, str(directory / "config" / "config.js")],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert json.loads(out.stdout) == {
        "port": 8123,
        "bind": "127.0.0.1",
        "nothrottle": True,
        "sub": 1,
        "logchat": False,
        "stats": 0,
        "repl": False,
        "crashguard": True,
        "example": True,
    }


def test_server_dir_links_the_package_and_leaves_it_untouched(tmp_path):
    package = find_showdown()
    directory = prepare_server_dir(tmp_path / "srv", 8124)
    assert (directory / "dist").resolve() == (package / "dist").resolve()
    assert (directory / "node_modules" / "sockjs").is_dir()
    assert (directory / "config" / "chat-plugins").is_dir()
    assert (directory / "logs" / "repl").is_dir()
    assert not (package / "config" / "config.js").exists()
    assert not (package / "logs").exists()


def test_find_showdown_default_and_override(monkeypatch, tmp_path):
    assert find_showdown() == (REPO / "node_modules" / "pokemon-showdown").resolve()
    monkeypatch.setenv("MAPLE_SHOWDOWN_DIR", str(tmp_path))
    with pytest.raises(ShowdownNotInstalledError, match="make setup"):
        find_showdown()


@pytest.mark.integration  # runs node --version
def test_missing_node_and_missing_package_are_clear_errors(monkeypatch, tmp_path, no_new_node):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(NodeNotFoundError, match=r"Node.js 18\+ not found on PATH.*make setup"):
        ShowdownServer().start()
    monkeypatch.undo()
    monkeypatch.setenv("MAPLE_SHOWDOWN_DIR", str(tmp_path / "nope"))
    with pytest.raises(ShowdownNotInstalledError, match=r"make setup.*scripts/setup.sh"):
        ShowdownServer().start()
    assert issubclass(NodeNotFoundError, ShowdownError)
    assert issubclass(ShowdownError, RuntimeError)


def test_external_server_urls():
    assert (
        external_server("127.0.0.1:8000").websocket_url == "ws://127.0.0.1:8000/showdown/websocket"
    )
    assert (
        external_server("wss://sim3.psim.us/showdown/websocket").websocket_url
        == "wss://sim3.psim.us/showdown/websocket"
    )
    for bad in ("localhost", "http://x:1", "host:port"):
        with pytest.raises(ValueError):
            external_server(bad)


def test_port_is_unknown_before_start():
    with pytest.raises(ShowdownError, match="start"):
        _ = ShowdownServer().port


# ---------------------------------------------------------------------- integration


@pytest.mark.integration
def test_session_server_accepts_logins(showdown_server):
    assert showdown_server.is_alive()
    assert showdown_server.pid in child_node_pids()
    assert (
        showdown_server.server_configuration.websocket_url
        == f"ws://127.0.0.1:{showdown_server.port}/showdown/websocket"
    )
    showdown_server.warm_up()  # a websocket gets the login challenge
    assert "listening on 127.0.0.1" in showdown_server.log_path.read_text()
    # started with the preload, so its start-up ran no `git add -A` into a scratch index
    assert str(PRELOAD) in psutil.Process(showdown_server.pid).cmdline()
    server_dir = showdown_server.log_dir / f"showdown-{showdown_server.port}"
    assert (server_dir / "logs").is_dir() and not (server_dir / "logs" / ".gitindex").exists()


_EXEC_TWO = """
const {exec} = require('child_process');
exec('git --version', (gitError, gitOut) => exec('echo ran', (error, out) =>
  console.log(JSON.stringify([gitError && gitError.code, gitOut, error, out.trim()]))));
"""


@pytest.mark.integration  # runs node
def test_the_server_preload_fails_git_commands_and_runs_every_other():
    """Showdown's start-up asks git for a version hash (``git add -A``, ``git write-tree``
    from the package's folder), which stages the checkout around the package and writes its
    untracked files into that repository: the preload makes git commands fail, only them."""
    node = find_node()
    script = ["-e", _EXEC_TWO]
    plain = subprocess.run([node, *script], capture_output=True, text=True, timeout=60)
    loaded = subprocess.run(
        [node, "--require", str(PRELOAD), *script], capture_output=True, text=True, timeout=60
    )
    assert json.loads(loaded.stdout) == [1, "", None, "ran"], loaded.stderr
    code, version, _, ran = json.loads(plain.stdout)  # without it, git runs (when installed)
    assert ran == "ran" and (code != 0 or version.startswith("git version"))


@pytest.mark.integration
def test_lifecycle_stop_restart_and_recover_from_a_kill(tmp_path, no_new_node):
    server = ShowdownServer(log_dir=tmp_path, warm=False)
    with server:
        port, first = server.port, server.pid
        assert port_is_open(port)
        server.restart()
        assert server.port == port and server.pid != first and port_is_open(port)
        os.kill(server.pid, signal.SIGKILL)
        assert _wait(lambda: not server.is_alive())
        assert server.ensure_running() is True
        assert server.port == port and _wait(lambda: port_is_open(port))
        assert server.ensure_running() is False
        last = server.pid
    assert not pid_alive(last) and not port_is_open(port)
    server.stop()  # idempotent
    assert (tmp_path / f"showdown-{port}.log").exists()


@pytest.mark.integration
def test_start_failures_carry_the_reason(tmp_path, no_new_node):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(ServerStartError, match="already in use"):
            ShowdownServer(port=taken.getsockname()[1]).start()
    bad = ShowdownServer(
        log_dir=tmp_path, config={"bindaddress": "203.0.113.7"}, start_timeout=30, warm=False
    )
    started = time.monotonic()
    with pytest.raises(ServerStartError, match="EADDRNOTAVAIL"):
        bad.start()
    assert time.monotonic() - started < 25  # failed fast, not by timeout
    bad.stop()


@pytest.mark.integration
def test_pool_round_robin_and_watchdog_restart(tmp_path, no_new_node):
    with ServerPool(2, log_dir=tmp_path, warm=False) as pool:
        urls = [pool.configuration_for(i).websocket_url for i in range(4)]
        assert urls[0] == urls[2] != urls[1] == urls[3]
        pool.start_watchdog(interval=0.2)
        victim = pool.servers[1]
        port, pid = victim.port, victim.pid
        os.kill(pid, signal.SIGKILL)
        assert _wait(lambda: victim.pid != pid and victim.is_alive() and port_is_open(port))
        assert victim.port == port and victim.restarts == 1
        pids = [s.pid for s in pool]
    assert not any(pid_alive(p) for p in pids)


@pytest.mark.integration
def test_watchdog_backs_off_then_gives_up_when_the_port_is_taken(tmp_path, no_new_node):
    """A dead server whose port another program took cannot come back on it: the watchdog
    tries a bounded number of times, waiting longer each time, then gives up with a reason
    naming the port and its holder (it used to retry every second for as long as the run
    lived)."""
    with ServerPool(1, log_dir=tmp_path, warm=False) as pool:
        server = pool.servers[0]
        port, pid = server.port, server.pid
        server.kill()
        assert _wait(lambda: not server.is_alive())
        with socket.socket() as taken:
            taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            taken.bind(("127.0.0.1", port))
            taken.listen()
            pool.start_watchdog(interval=0.05)  # then 0.05, 0.1, 0.2, 0.4 s between tries
            assert _wait(lambda: pool.failure is not None, timeout=30)
            assert "maple-server-watchdog gave up after 5 failed restarts" in pool.failure
            assert f"port {port} on 127.0.0.1 is already in use (by pid {os.getpid()}" in (
                pool.failure
            )
            # the fifth failure ended the watch: no sixth try
            assert server.restarts == 5 and not server.is_alive()
        assert not pid_alive(pid)


@pytest.mark.integration
def test_a_port_taken_while_the_server_starts_is_not_taken_for_the_server(tmp_path, no_new_node):
    """A program that binds the port between the launch's check and Node's listen accepts
    connections too. The server is not ready then (it used to count as ready on that
    foreign socket, and clients waited on a port nobody answered): Node's EADDRINUSE fails
    the start and an unpinned server moves to a new port, where its own process listens."""
    for _ in range(5):
        server = ShowdownServer(log_dir=tmp_path, warm=False).start(wait=False)
        port = server.port
        taken = socket.socket()
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            taken.bind(("127.0.0.1", port))
        except OSError:  # Node listened first (it loads for a second or more): again
            taken.close()
            server.stop()
            continue
        try:
            taken.listen()
            server.wait_until_ready()
            assert server.port != port
            assert listens_on(server.pid, server.port)
            assert "EADDRINUSE" in (tmp_path / f"showdown-{port}.log").read_text()
        finally:
            taken.close()
            server.stop()
        return
    pytest.fail("Node listened before the test could take its port, 5 times in a row")


@pytest.mark.integration
def test_a_port_that_accepts_but_never_answers_is_not_responsive():
    """What a stopped server looks like to a client: the kernel accepts the connection,
    nothing answers. The ping gives up at its timeout."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        server = ShowdownServer(port=silent.getsockname()[1])
        started = time.monotonic()
        assert server.responsive(1.0) is False
        assert time.monotonic() - started < 10


@pytest.mark.integration
def test_watchdog_kills_and_restarts_a_stopped_server(tmp_path, no_new_node):
    """SIGSTOP: the process is alive but hung; unanswered pings get it killed (SIGKILL,
    which a stopped process cannot ignore) and restarted on its port."""
    with ServerPool(
        1, log_dir=tmp_path, warm=False, health_timeout=3.0, health_failures=2, health_interval=0.5
    ) as pool:
        server = pool.servers[0]
        assert server.responsive(30.0)
        pool.start_watchdog(interval=0.2)
        port, pid = server.port, server.pid
        os.kill(pid, signal.SIGSTOP)
        assert _wait(lambda: server.pid != pid and server.is_alive(), timeout=90)
        assert not pid_alive(pid) and server.port == port and server.restarts == 1
        assert _wait(lambda: port_is_open(port)) and server.responsive(30.0)
        last = server.pid
    assert not pid_alive(last)


def test_health_failures_must_be_positive():
    with pytest.raises(ValueError, match="health_failures must be >= 1, got 0"):
        ServerPool(1, health_failures=0)


@pytest.mark.integration
def test_node_dies_with_a_killed_python_parent(tmp_path):
    code = (
        "import sys, time; from mapleenv.showdown import ShowdownServer; "
        "s = ShowdownServer(log_dir=sys.argv[1], warm=False).start(); "
        "print(s.pid, flush=True); time.sleep(120)"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True, cwd=REPO
    )
    try:
        node_pid = int(parent.stdout.readline())
        assert pid_alive(node_pid)
        parent.kill()  # SIGKILL: no atexit, only PR_SET_PDEATHSIG can stop Node
        parent.wait(10)
        assert _wait(lambda: not pid_alive(node_pid), timeout=10)
    finally:
        parent.kill()
        parent.wait()
