"""``trainer.play`` against a server that never stops talking (issue 61): a scripted
"Showdown" on 127.0.0.1 floods a battle with chat, floods the challenge list, plays a
battle that never ends, or starts one and goes silent. Each loop of the server is bounded.
The agent keeps bounded memory, forfeits what goes on too long with one line, and ends
with its results."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from hostile_servers import FOE, TAG, ScriptedShowdown, a_turn, battle_start, request

ROOT = Path(__file__).resolve().parents[3]
CHECKPOINT = ROOT / "models" / "attention_ppo_gen9random.pt"
MIB = 1 << 20


def play(tmp_path: Path, port: int, *overrides: str, timeout: float = 240) -> tuple[int, str, int]:
    """(exit code, stderr, peak RSS in bytes) of ``python -m trainer.play`` on ``port``,
    its RSS sampled every 20 ms (psutil)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trainer.play",
            f"checkpoint={CHECKPOINT}",
            f"server=127.0.0.1:{port}",
            "battles=1",
            f"hydra.run.dir={tmp_path / 'run'}",
            *overrides,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    watched, peak = psutil.Process(proc.pid), 0
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        with contextlib.suppress(psutil.Error):
            peak = max(peak, watched.memory_info().rss)
        time.sleep(0.02)
    if proc.poll() is None:
        proc.kill()
    _, err = proc.communicate(timeout=30)
    return proc.returncode, err, peak


def results(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "run" / "play.json").read_text())


async def win_after(server: ScriptedShowdown, websocket, name: str, frames: list[str]) -> None:
    """The battle offered and its first choice awaited; ``frames`` sent; the agent wins."""
    await server.offer_battle(websocket, name)
    await server.next_message(websocket, "/choose ")
    for frame in frames:
        await server.send(websocket, frame)
    await server.send(websocket, f">{TAG}\n|win|{name}")


def served(script) -> ScriptedShowdown:
    return ScriptedShowdown(script)


CHAT_LINE = f"|c|{FOE}|" + "spam " * 200  # 1 KB
CHAT_FRAME = f">{TAG}\n" + "\n".join([CHAT_LINE] * 900)  # ~0.9 MB (the 1 MiB frame limit)
ANIM_FRAME = f">{TAG}\n" + "\n".join(
    [f"|-anim|p2a: Eevee|Tackle|p1a: Pikachu|{i}" for i in range(20_000)]
)


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_battle_flooded_with_chat_keeps_nothing_of_it(tmp_path: Path) -> None:
    """~180 MB of battle-room chat (poke-env kept it all: 225 MB -> 616 MiB peak)."""

    async def script(server, websocket, name):
        await win_after(server, websocket, name, [CHAT_FRAME] * 200)

    server = served(script)
    try:
        code, err, peak = play(tmp_path, server.port)
    finally:
        server.close()
    assert code == 0, err[-3000:]
    assert server.sent_bytes > 150 * MIB
    (battle,) = results(tmp_path)["battles"]
    assert battle["result"] == "won" and battle["turns"] == 1
    assert peak < 600 * MIB, peak / MIB
    assert "Traceback" not in err


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_battle_past_its_line_cap_is_read_for_its_requests_only(tmp_path: Path) -> None:
    async def script(server, websocket, name):
        await win_after(server, websocket, name, [ANIM_FRAME] * 10)  # 200,000 lines

    server = served(script)
    try:
        code, err, _ = play(tmp_path, server.port)
    finally:
        server.close()
    assert code == 0, err[-3000:]
    capped = [line for line in err.splitlines() if "the server sent more than 50000 lines" in line]
    assert len(capped) == 1, err[-3000:]
    assert results(tmp_path)["battles"][0]["result"] == "won"


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_flood_of_challenges_queues_a_few(tmp_path: Path) -> None:
    """150 ``|updatechallenges|`` of 25,000 names each (poke-env queued all: 630 MiB)."""

    async def script(server, websocket, name):
        for frame in range(150):
            names = {f"u{frame}x{i}": "gen9randombattle" for i in range(25_000)}
            await server.send(
                websocket, "|updatechallenges|" + json.dumps({"challengesFrom": names})
            )
        accepted = await server.next_message(websocket, "/accept ")
        server.accepted = accepted
        await server.send(websocket, battle_start(name))
        await server.send(websocket, request(name, 1))
        await server.next_message(websocket, "/choose ")
        await server.send(websocket, f">{TAG}\n|win|{name}")

    server = served(script)
    try:
        code, err, peak = play(tmp_path, server.port)
    finally:
        server.close()
    assert code == 0, err[-3000:]
    assert server.accepted.endswith("/accept u0x0"), server.accepted
    assert sum("/accept" in m for m in server.received) == 1
    assert peak < 600 * MIB, peak / MIB


async def endless(server: ScriptedShowdown, websocket, name: str) -> None:
    """A battle whose every turn is answered by the next, up to 3,000 turns; stops at the
    agent's forfeit (and never sends the battle's end)."""
    await server.offer_battle(websocket, name)
    for turn in range(2, 3000):
        message = await server.next_message(websocket, "|/")
        if "/forfeit" in message:
            server.forfeited_at = turn
            return
        await server.send(websocket, request(name, turn))
        await server.send(websocket, a_turn(turn))
    server.forfeited_at = None


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_battle_that_never_ends_is_forfeited_at_max_turns(tmp_path: Path) -> None:
    server = served(endless)
    try:
        code, err, _ = play(tmp_path, server.port, "max_turns=25")
    finally:
        server.close()
    assert code == 0, err[-3000:]
    forfeits = [line for line in err.splitlines() if "forfeited, past turn 25" in line]
    assert len(forfeits) == 1, err[-3000:]
    assert server.forfeited_at is not None and server.forfeited_at <= 30
    (battle,) = results(tmp_path)["battles"]
    assert battle["result"] == "lost" and battle["turns"] == 26


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_battle_gone_silent_is_forfeited_at_battle_minutes(tmp_path: Path) -> None:
    async def silent(server, websocket, name):
        await server.offer_battle(websocket, name)
        await server.next_message(websocket, "/choose ")
        await server.next_message(websocket, "/forfeit", timeout=120)  # then nothing
        server.forfeited = True

    server = served(silent)
    start = time.monotonic()
    try:
        code, err, _ = play(tmp_path, server.port, "battle_minutes=0.1")
    finally:
        server.close()
    assert code == 0, err[-3000:]
    assert getattr(server, "forfeited", False)
    assert time.monotonic() - start < 120
    assert sum("still going after 0.1 min" in line for line in err.splitlines()) == 1
    assert results(tmp_path)["battles"][0]["result"] == "lost"


def test_play_refuses_bad_limits() -> None:
    from trainer.apps.live import PlayError
    from trainer.apps.play import validate
    from trainer.config import PlayConfig

    with pytest.raises(PlayError, match="max_turns must be >= 1"):
        validate(PlayConfig(checkpoint="x", max_turns=0))
    with pytest.raises(PlayError, match="battle_minutes must be > 0 or null"):
        validate(PlayConfig(checkpoint="x", battle_minutes=0))


def test_the_challenge_queue_drops_repeats_and_the_overflow() -> None:
    from mapleenv.bounded import BoundedQueue

    async def fill() -> list[str]:
        queue = BoundedQueue(3)
        for name in ["a", "a", "b", "c", "d", "e"]:
            await queue.put(name)
        return [queue.get_nowait() for _ in range(queue.qsize())]

    assert asyncio.run(fill()) == ["a", "b", "c"]
