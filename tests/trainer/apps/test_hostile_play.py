"""``trainer.play`` against hostile servers and settings (issue #21): a server that floods
garbage cannot fill the disk and is dropped with one line; a taken name, a failed login,
a bad server URL, a format that needs a team without one: one line, exit code 2, fast;
the password is never printed nor written (docs/security.md)."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostile_servers import LoopServer
from poke_env.player import RandomPlayer
from poke_env.ps_client import AccountConfiguration, ServerConfiguration
from warm_cli import run_python
from websockets.asyncio.server import serve

ROOT = Path(__file__).resolve().parents[3]
CHECKPOINT = ROOT / "models" / "attention_ppo_gen9random.pt"
AUTH_URL = "https://play.pokemonshowdown.com/action.php?"
FLOOD_MESSAGES = 20_000  # at most, per connection
FLOOD_SECONDS = 90.0  # at most, per connection


def play(tmp_path: Path, *overrides: str, env: dict | None = None, timeout: float = 150):
    """``python -m trainer.play`` with its run dir in ``tmp_path/run``."""
    return run_python(
        [
            sys.executable,
            "-m",
            "trainer.play",
            f"checkpoint={CHECKPOINT}",
            f"hydra.run.dir={tmp_path / 'run'}",
            *overrides,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def error_lines(proc: subprocess.CompletedProcess) -> list[str]:
    """The error lines: on stderr (stdout is for results: none when it fails)."""
    assert "[ERROR]" not in proc.stdout, proc.stdout[-3000:]
    return [line for line in proc.stderr.splitlines() if "[ERROR]" in line]


class FloodServer(LoopServer):
    """A websocket server on 127.0.0.1 that greets like Showdown (``|challstr|``), then
    sends garbage as fast as it can: at most :data:`FLOOD_MESSAGES` messages and
    :data:`FLOOD_SECONDS` per connection."""

    def __init__(self) -> None:
        self.sent = 0
        super().__init__(self._serve)

    async def _serve(self, websocket) -> None:
        await self._flood(websocket)
        await websocket.wait_closed()  # (the client going away mid-flood: LoopServer)

    async def _flood(self, websocket) -> None:
        deadline = time.monotonic() + FLOOD_SECONDS
        await websocket.send("|challstr|4|" + "ab" * 64)
        for i in range(FLOOD_MESSAGES):
            if time.monotonic() > deadline:
                break
            await websocket.send(f"garbage {i} " + "x" * 200)  # no "|": poke-env cannot parse
            self.sent += 1


@pytest.fixture
def flood_server() -> Iterator[FloodServer]:
    server = FloodServer()
    try:
        yield server
    finally:
        server.close()


@pytest.mark.integration
@pytest.mark.timeout(240)
def test_a_server_flooding_garbage_is_dropped_and_the_log_stays_small(
    tmp_path: Path, flood_server: FloodServer
) -> None:
    start = time.monotonic()
    proc = play(tmp_path, f"server=127.0.0.1:{flood_server.port}", timeout=180)
    took = time.monotonic() - start
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-3000:]
    errors = error_lines(proc)
    assert "messages that could not be handled" in errors[-1], errors[-3:]
    assert "garbage 0 " in errors[-1]  # the first of them, cut short
    assert took < 120
    assert flood_server.sent >= 100
    log_files = list((tmp_path / "run").glob("play.log*"))
    assert log_files and sum(f.stat().st_size for f in log_files) < 1 << 20
    # the first few tracebacks only; the rest counted, not printed
    assert out.count("Traceback") <= 20, out.count("Traceback")
    assert "were dropped" in out or "more like the next" in out


FORGED = (
    "[2026-01-01 00:00:00,000][trainer.play][INFO] - battle 1/1 "
    "battle-gen9randombattle-1: won in 12 turns vs x"
)
MAPLE_RECORD = re.compile(r"\[\d{4}-\d\d-\d\d [\d:,]+\]\[[^\]]+\]\[[A-Z]+\] - ")


class HostileServer(FloodServer):
    """Greets like Showdown, sends ``frames`` (forged log lines, a frame of newlines, one
    over the size limit), then closes the connection."""

    def __init__(self, frames: list[str]) -> None:
        self.frames = frames
        super().__init__()

    async def _flood(self, websocket) -> None:
        await websocket.send("|challstr|4|" + "ab" * 64)
        for frame in self.frames:
            await websocket.send(frame)
            self.sent += 1
        await websocket.close()

    async def _main(self) -> None:
        self._stop = self.loop.create_future()
        async with serve(self._handler, "127.0.0.1", 0, max_size=None) as server:
            self.port = next(iter(server.sockets)).getsockname()[1]
            self._ready.set()
            await self._stop


def hostile_play(tmp_path: Path, frames: list[str]) -> subprocess.CompletedProcess:
    server = HostileServer(frames)
    try:
        return play(tmp_path, f"server=127.0.0.1:{server.port}", timeout=120)
    finally:
        server.close()


@pytest.mark.integration
@pytest.mark.timeout(240)
def test_a_server_cannot_forge_or_multiply_log_records(tmp_path: Path) -> None:
    """Server text reaches the log with its line breaks escaped, tracebacks indented: no
    line of ``play.log`` that reads like a record of Maple's is the server's."""
    frames = [
        f"|popup|hello\n{FORGED}",
        f"|popup|hello\r{FORGED}\x1b[2J\u2028{FORGED}",
        "\n" * ((1 << 20) - 64),  # a 1 MiB frame of newlines
        f"|{FORGED}\n|\n" * 100,  # frames that cannot be handled, with forged lines
    ]
    proc = hostile_play(tmp_path, frames)
    assert proc.returncode == 2, (proc.stdout + proc.stderr)[-3000:]
    log = (tmp_path / "run" / "play.log").read_text()
    assert len(log) < 200_000 and len(proc.stderr) < 200_000, (len(log), len(proc.stderr))
    for line in log.splitlines() + proc.stderr.splitlines():
        if MAPLE_RECORD.match(line):
            assert "won in 12 turns" not in line.split("] - ", 1)[0]
            assert not line.split("] - ", 1)[1].startswith("battle 1/1"), line[:300]
        else:  # a traceback's lines, indented; poke-env's own console format
            assert line.startswith((" ", "20")), line[:300]
    assert "won in 12 turns" in log  # there, escaped inside the server's message
    records = [line for line in log.splitlines() if MAPLE_RECORD.match(line)]
    assert len(records) < 60, len(records)


@pytest.mark.integration
@pytest.mark.timeout(240)
def test_a_frame_over_the_size_limit_is_one_line(tmp_path: Path) -> None:
    proc = hostile_play(tmp_path, ["x" * (50 << 20)])
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "could not connect to ws://127.0.0.1:" in lines[0], lines[:20]
    assert (
        "message too big" in lines[0] and "Traceback" in (tmp_path / "run" / "play.log").read_text()
    )


@pytest.mark.integration
@pytest.mark.timeout(240)
def test_a_taken_name_is_one_line_and_exit_2(tmp_path: Path, showdown_server) -> None:
    name = f"taken{os.getpid()}"[:18]
    holder = RandomPlayer(
        account_configuration=AccountConfiguration(name, None),
        server_configuration=ServerConfiguration(
            f"ws://127.0.0.1:{showdown_server.port}/showdown/websocket", AUTH_URL
        ),
        log_level=logging.ERROR,
    )
    asyncio.run_coroutine_threadsafe(
        asyncio.wait_for(holder.ps_client.logged_in.wait(), 60), holder.ps_client.loop
    ).result()
    start = time.monotonic()
    proc = play(tmp_path, f"server=127.0.0.1:{showdown_server.port}", f"username={name}")
    assert proc.returncode == 2, (proc.stdout + proc.stderr)[-3000:]
    assert time.monotonic() - start < 50  # not the 60-s login wait
    errors = error_lines(proc)
    assert len(errors) == 1 and f"the server refused the name '{name}'" in errors[0], errors
    assert "Someone is already using the name" in errors[0]


SECRET = "s3cret-Pw-42!"


@pytest.mark.integration
@pytest.mark.timeout(300)
@pytest.mark.parametrize("source", ["env", "file"])
def test_the_password_is_never_printed_nor_written(
    tmp_path: Path, showdown_server, source: str
) -> None:
    """A password makes poke-env log in through the official login server, which this
    machine may not reach: the login fails (one line, exit 2) or the server refuses the
    name. Either way the password is in no output and no file of the run dir."""
    overrides = [f"server=127.0.0.1:{showdown_server.port}", f"username=pw{os.getpid()}"[:27]]
    env = {}
    if source == "env":
        env["MAPLE_PASSWORD"] = SECRET
    else:
        secret_file = tmp_path / "password"
        secret_file.write_text(SECRET + "\n")
        secret_file.chmod(0o600)
        overrides.append(f"password_file={secret_file}")
    proc = play(tmp_path, *overrides, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-3000:]
    assert len(error_lines(proc)) == 1, out[-3000:]
    assert SECRET not in out
    written = [p for p in (tmp_path / "run").rglob("*") if p.is_file()]
    assert written  # play.log, play.json
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), path


@pytest.mark.integration
def test_a_password_on_the_command_line_is_refused_without_echo(tmp_path: Path) -> None:
    proc = play(tmp_path, f"password={SECRET}", "bogus_key=1")
    assert proc.returncode == 2 and proc.stdout == ""
    out = proc.stderr
    assert SECRET not in out and "MAPLE_PASSWORD" in out and "Traceback" not in out
    assert len(out.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["server=ws://127.0.0.1:99999/showdown/websocket"], "port in 1..65535"),
        (["server=http://127.0.0.1:8000"], "unsupported server URL"),
        (["server=127.0.0.1:0"], "port in 1..65535"),
        (["server=local", "port=70000"], "port must be in 1..65535"),
        (["battle_format=gen9ou"], "'gen9ou' needs a team for each player"),
        (["battle_format=gen9ou", "team=/dev/zero"], "team: /dev/zero is a character device"),
        (["password_file=/nonexistent/pw"], "password_file: cannot read /nonexistent/pw"),
    ],
)
@pytest.mark.integration
def test_bad_play_settings_are_one_line_before_anything_is_written(
    tmp_path: Path, overrides: list[str], message: str
) -> None:
    proc = play(tmp_path, *overrides, timeout=120)
    out = proc.stderr  # the preflight's line; stdout is for results
    assert proc.returncode == 2 and proc.stdout == "", out[-3000:]
    assert out.strip().count("\n") == 0 and message in out, out[-3000:]
    assert not (tmp_path / "run").exists()


def test_the_flood_guard_passes_a_burst_and_counts_the_rest() -> None:
    from trainer.apps.guard import FloodGuard

    records: list[logging.LogRecord] = []

    class Keep(logging.StreamHandler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger = logging.getLogger(f"flood-test-{os.getpid()}")
    logger.propagate = False
    handler = Keep()
    logger.addHandler(handler)
    guard = FloodGuard(burst=5, window_s=3600, max_chars=100)
    guard.install([logger])
    try:
        for i in range(1000):
            logger.error(f"Task-{i} failed:\n" + "y" * 500)  # as asyncio's reports: unique
        logger.warning("something else")
    finally:
        guard.remove()
        logger.removeHandler(handler)
    assert len(records) == 6  # the burst of one kind, and the other kind
    assert all(len(r.getMessage()) < 200 for r in records)  # cut at max_chars
    assert guard.pending() == [
        f"995 more log records like 'Task-# failed:' (flood-test-{os.getpid()}) were dropped"
    ]


def test_a_password_file_must_be_a_small_regular_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainer.apps.live import PlayError, resolve_password
    from trainer.config import PlayConfig

    fifo = tmp_path / "pw.fifo"
    os.mkfifo(fifo)
    cfg = PlayConfig(checkpoint="x", password_file=str(fifo))
    with pytest.raises(ValueError, match=f"password_file: {fifo} is a FIFO"):
        resolve_password(cfg)
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(PlayError, match="is empty"):
        resolve_password(PlayConfig(checkpoint="x", password_file=str(empty)))
    good = tmp_path / "good"
    good.write_text(SECRET + "\nignored\n")
    good.chmod(0o600)
    assert resolve_password(PlayConfig(checkpoint="x", password_file=str(good))) == SECRET
    monkeypatch.delenv("MAPLE_PASSWORD", raising=False)
    assert resolve_password(PlayConfig(checkpoint="x")) is None
    monkeypatch.setenv("MAPLE_PASSWORD", SECRET)
    assert resolve_password(PlayConfig(checkpoint="x")) == SECRET
