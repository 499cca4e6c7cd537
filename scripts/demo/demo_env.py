#!/usr/bin/env python
"""Play N battles with random legal actions through ``mapleenv/Showdown-v0`` and print them.

    python scripts/demo/demo_env.py --battles 3 --opponent heuristic
    python scripts/demo/demo_env.py --server 127.0.0.1:8000      # an already running server
    python scripts/demo/demo_env.py --record tests/data/new      # keep the websocket frames

With no ``--server`` an embedded Showdown server is started and stopped. The last line
is a JSON summary (battles, wins, steps, startup seconds -- the first reset, which
starts the server --, then seconds and steps/s of the battles).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

import mapleenv  # noqa: F401  (registers mapleenv/Showdown-v0)

sys.path.append(str(Path(__file__).resolve().parents[1]))  # scripts/: the shared _cli (last)
from _cli import script_parser  # noqa: E402


def parse_args() -> argparse.Namespace:
    parser = script_parser(__doc__)
    parser.add_argument(
        "--battles", type=int, default=3, help="battles to play (default %(default)s)"
    )
    parser.add_argument(
        "--opponent",
        default="random",
        help="random | max_power | heuristic | policy:<checkpoint> (default %(default)s)",
    )
    parser.add_argument(
        "--format", default="gen9randombattle", help="battle format (default %(default)s)"
    )
    parser.add_argument("--server", default=None, help="host:port or ws:// URL (default: embedded)")
    parser.add_argument(
        "--max-turns", type=int, default=None, help="end a battle at this turn (default: never)"
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="battle i is seeded seed + i; also seeds the random actions (default %(default)s)",
    )
    parser.add_argument("--record", default=None, help="directory for battle frame logs")
    parser.add_argument("--log-dir", default=None, help="embedded server directory and log")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log at INFO level (server start, connections)"
    )
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )

    env = gym.make(
        "mapleenv/Showdown-v0",
        battle_format=args.format,
        opponent=args.opponent,
        server=args.server,
        backend="server",  # an embedded server without --server (the frames need one)
        max_turns=args.max_turns,
        record_dir=args.record,
        log_dir=args.log_dir,
    )
    rng = np.random.default_rng(args.seed)
    wins = steps = 0
    start = time.perf_counter()
    startup = 0.0
    try:
        for i in range(args.battles):
            obs, info = env.reset(seed=args.seed + i)
            if i == 0:  # includes starting (and warming up) the embedded server
                startup = time.perf_counter() - start
                start = time.perf_counter()
            total, done = 0.0, False
            while not done:
                action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
                obs, reward, terminated, truncated, info = env.step(action)
                total += reward
                steps += 1
                done = terminated or truncated
            wins += bool(info.get("won"))
            outcome = "aborted" if "aborted" in info else ("won" if info.get("won") else "lost")
            print(
                f"battle {i + 1}/{args.battles}: {info['battle_tag']} {outcome} "
                f"in {info['turns']} turns, return {total:+.2f}",
                flush=True,
            )
    finally:
        env.close()
    elapsed = time.perf_counter() - start
    print(
        json.dumps(
            {
                "battles": args.battles,
                "wins": wins,
                "opponent": args.opponent,
                "steps": steps,
                "startup_s": round(startup, 2),
                "seconds": round(elapsed, 2),
                "steps_per_s": round(steps / elapsed, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
