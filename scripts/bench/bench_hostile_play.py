#!/usr/bin/env python
"""Peak memory of ``python -m trainer.play`` against hostile servers next to the same
command against an honest one (issue 61; docs/security.md). The servers are the tests'
scripted "Showdown" (``tests/hostile_servers.py``, 127.0.0.1 only, bounded loops).

One JSON line per case, peak RSS sampled every 20 ms with psutil, cases run one after another:

    python scripts/bench/bench_hostile_play.py [--cases honest,chat,challenges,endless]

``ratio`` is each case's peak over the honest case's of the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from hostile_servers import TAG, ScriptedShowdown, a_turn, battle_start, request  # noqa: E402

CHECKPOINT = ROOT / "models" / "attention_ppo_gen9random.pt"
CHAT_FRAME = f">{TAG}\n" + "\n".join(["|c|rival|" + "spam " * 200] * 900)


async def honest(server, websocket, name):
    await server.offer_battle(websocket, name)
    await server.next_message(websocket, "/choose ")
    await server.send(websocket, f">{TAG}\n|win|{name}")


async def chat(server, websocket, name):
    await server.offer_battle(websocket, name)
    await server.next_message(websocket, "/choose ")
    for _ in range(250):  # ~225 MB, the red team's case
        await server.send(websocket, CHAT_FRAME)
    await server.send(websocket, f">{TAG}\n|win|{name}")


async def challenges(server, websocket, name):
    for frame in range(150):
        names = {f"u{frame}x{i}": "gen9randombattle" for i in range(25_000)}
        await server.send(websocket, "|updatechallenges|" + json.dumps({"challengesFrom": names}))
    await server.next_message(websocket, "/accept ")
    await server.send(websocket, battle_start(name))
    await server.send(websocket, request(name, 1))
    await server.next_message(websocket, "/choose ")
    await server.send(websocket, f">{TAG}\n|win|{name}")


async def endless(server, websocket, name):
    await server.offer_battle(websocket, name)
    for turn in range(2, 3000):
        message = await server.next_message(websocket, "|/")
        if "/forfeit" in message:
            return
        await server.send(websocket, request(name, turn))
        await server.send(websocket, a_turn(turn))
    await asyncio.sleep(0)


CASES = {"honest": honest, "chat": chat, "challenges": challenges, "endless": endless}


def measure(name: str) -> dict:
    server = ScriptedShowdown(CASES[name])
    start = time.monotonic()
    try:
        with tempfile.TemporaryDirectory() as folder:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "trainer.play",
                    f"checkpoint={CHECKPOINT}",
                    f"server=127.0.0.1:{server.port}",
                    "battles=1",
                    f"hydra.run.dir={folder}",
                ],
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            watched, peak = psutil.Process(proc.pid), 0
            while proc.poll() is None and time.monotonic() - start < 600:
                with contextlib.suppress(psutil.Error):
                    peak = max(peak, watched.memory_info().rss)
                time.sleep(0.02)
            if proc.poll() is None:
                proc.kill()
            _, err = proc.communicate()
    finally:
        server.close()
    return {
        "case": name,
        "exit": proc.returncode,
        "peak_rss_mib": round(peak / (1 << 20), 1),
        "sent_mb": round(server.sent_bytes / 1e6, 1),
        "seconds": round(time.monotonic() - start, 1),
        "forfeited": "forfeited" in err,
        "load": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated cases")
    args = parser.parse_args()
    base = None
    for name in args.cases.split(","):
        row = measure(name)
        base = base or (row["peak_rss_mib"] if name == "honest" else None)
        row["ratio"] = round(row["peak_rss_mib"] / base, 2) if base else None
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
