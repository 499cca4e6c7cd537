#!/usr/bin/env python
"""Env start-up with and without the simulator's startup snapshot, measured side by side.

Each round starts, in a fresh Python process per mode, ``mapleenv.make_vector_env(N)``
(direct backend, random opponent; N=1 is one ``gym.make`` env in the process) and resets it:
``startup_s`` is the wall time from the call to the first observation, ``cpu_s`` the CPU
time of that process and everything it started (workers, Node hosts) by then. The modes
alternate within every round (``snapshot`` first in odd rounds), so both see the same load;
``plain`` is a host's start before the snapshot existed (``MAPLE_SIM_SNAPSHOT=0``). One
JSON line per N with the medians and the median of the per-round ratios plain/snapshot:

    python scripts/bench/bench_startup.py --num-envs 1,8 --rounds 5

The snapshot must be current (``maple-setup-sim --snapshot``), or the script says so and
exits with code 2.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # scripts/: the shared _cli (last)
from _cli import print_json, script_parser  # noqa: E402

MODES = ("snapshot", "plain")

# Runs in the child: make the env, reset it, report wall and CPU (self and descendants).
CHILD = """
import json, sys, time
t0 = time.perf_counter()
import gymnasium as gym
import mapleenv
from mapleenv.measure import process_cpu
n = int(sys.argv[1])
if n == 1:
    env = gym.make(mapleenv.ENV_ID, backend="direct", opponent="random", seed=0)
else:
    env = mapleenv.make_vector_env(n, backend="direct", opponent="random", seed=0)
env.reset(seed=0)
wall = time.perf_counter() - t0
cpu = sum(process_cpu().values())
env.close()
print(json.dumps({"startup_s": wall, "cpu_s": cpu}))
"""


def measure(num_envs: int, mode: str) -> dict[str, float]:
    env = dict(os.environ, MAPLE_SIM_SNAPSHOT="1" if mode == "snapshot" else "0")
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(num_envs)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument("--num-envs", default="1,8", help="comma-separated env counts")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (each mode once)")
    args = parser.parse_args()
    from mapleenv.measure import machine_info
    from mapleenv.showdown import find_node, find_showdown
    from mapleenv.showdown.snapshot import node_args

    if not node_args(find_showdown(), find_node()):
        parser.exit(2, "bench_startup: no current snapshot; run `maple-setup-sim --snapshot`\n")
    for num_envs in [int(n) for n in args.num_envs.split(",")]:
        runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
        for round_ in range(args.rounds):
            for mode in MODES if round_ % 2 == 0 else MODES[::-1]:
                runs[mode].append(measure(num_envs, mode))
        line: dict[str, object] = {"num_envs": num_envs, "rounds": args.rounds}
        for key in ("startup_s", "cpu_s"):
            for mode in MODES:
                line[f"{mode}_{key}"] = round(statistics.median(r[key] for r in runs[mode]), 3)
            ratios = [p[key] / s[key] for p, s in zip(runs["plain"], runs["snapshot"], strict=True)]
            line[f"plain_over_snapshot_{key}"] = round(statistics.median(ratios), 3)
        line["machine"] = machine_info()
        line["time"] = time.strftime("%Y-%m-%dT%H:%M:%S")
        print_json(line)


if __name__ == "__main__":
    main()
