#!/usr/bin/env python
"""Env throughput next to the raw simulator's ceiling, measured side by side.

For every backend and every N in ``--num-envs`` this runs random legal (masked) actions
through ``mapleenv.make_vector_env(N, backend=...)`` against the ``random`` opponent for
``--seconds`` (after ``--warmup`` seconds not counted), then, right after on the same
machine, the simulator ceiling: random-vs-random battles in-process with the npm package's
``BattleStream`` (``mapleenv/js/sim_ceiling.js``), one Node process per core. One JSON line
per (backend, N):

    python scripts/bench_env.py --num-envs 1,4,8,16 --seconds 20 --backend server,direct

``env_steps_per_s`` counts agent decisions applied to battles (autoreset steps, where an
env only starts a new battle, are left out; ``vector_steps_per_s`` counts them).
``ratio = env_steps_per_s / sim_turns_per_s``. Quote ratios from one run: the machine may
be shared, and both numbers of a line are measured within a minute of each other.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SIM_CEILING_JS = REPO / "mapleenv" / "js" / "sim_ceiling.js"


def machine_info() -> dict[str, Any]:
    """CPU model, core count, load and tool versions, for the JSON record."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        node = None
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "node": node,
        "loadavg": list(os.getloadavg()),
    }


def sim_ceiling(seconds: float, procs: int, warmup: float = 2.0,
                battle_format: str = "gen9randombattle") -> dict[str, Any]:
    """Run ``procs`` ceiling processes at once; total simulator turns per second."""
    from mapleenv.server import find_node, find_showdown

    node = find_node()
    find_showdown()  # clear error when the npm package is missing
    cmd = [node, str(SIM_CEILING_JS), "--seconds", str(seconds), "--warmup", str(warmup),
           "--format", battle_format]
    runs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=REPO) for _ in range(procs)]
    results = []
    for run in runs:
        out, err = run.communicate(timeout=seconds + warmup + 120)
        if run.returncode != 0:
            raise RuntimeError(f"sim_ceiling.js failed ({run.returncode}): {err.strip()}")
        results.append(json.loads(out.strip().splitlines()[-1]))
    return {
        "sim_turns_per_s": sum(r["turns_per_s"] for r in results),
        "sim_procs": procs,
        "sim_battles": sum(r["battles"] for r in results),
        "sim_turns_per_s_each": [round(r["turns_per_s"], 1) for r in results],
    }


def random_masked_actions(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row of ``masks`` ([N, A], nonzero = legal)."""
    legal = masks.astype(bool)
    # Random scores, illegal ones pushed below every legal one: argmax is a uniform legal pick.
    scores = rng.random(legal.shape) + legal
    return scores.argmax(axis=1)


def env_throughput(num_envs: int, seconds: float, warmup: float, backend: str, servers: int,
                   battle_format: str, opponent: str, seed: int) -> dict[str, Any]:
    """Steps per second of ``make_vector_env`` with random masked actions."""
    import mapleenv

    rng = np.random.default_rng(seed)
    t_start = time.perf_counter()
    envs = mapleenv.make_vector_env(num_envs, backend=backend, servers=servers,
                                    battle_format=battle_format, opponent=opponent)
    try:
        obs, _ = envs.reset(seed=seed)
        startup_s = time.perf_counter() - t_start
        autoreset = np.zeros(num_envs, dtype=bool)
        counts = {"steps": 0, "vector_steps": 0, "episodes": 0}
        phase_end = time.perf_counter() + warmup
        measuring = False
        t0 = time.perf_counter()
        while True:
            now = time.perf_counter()
            if now >= phase_end:
                if measuring:
                    break
                measuring, t0, phase_end = True, now, now + seconds
                counts = dict.fromkeys(counts, 0)
            actions = random_masked_actions(obs["action_mask"], rng)
            obs, _, terminated, truncated, _ = envs.step(actions)
            counts["vector_steps"] += 1
            counts["steps"] += int(num_envs - autoreset.sum())
            done = terminated | truncated
            counts["episodes"] += int(done.sum())
            autoreset = done
        elapsed = time.perf_counter() - t0
    finally:
        envs.close()
    return {
        "env_steps_per_s": counts["steps"] / elapsed,
        "vector_steps_per_s": counts["vector_steps"] * num_envs / elapsed,
        "episodes": counts["episodes"],
        "startup_s": round(startup_s, 2),
        "measured_s": round(elapsed, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-envs", default="8", help="comma-separated N values, e.g. 1,4,8,16")
    parser.add_argument("--seconds", type=float, default=20.0, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=5.0, help="unmeasured seconds first")
    parser.add_argument("--backend", default="server", help="server, direct or server,direct")
    parser.add_argument("--servers", type=int, default=1, help="Showdown servers (server backend)")
    parser.add_argument("--battle-format", default="gen9randombattle")
    parser.add_argument("--opponent", default="random")
    parser.add_argument("--sim-procs", type=int, default=os.cpu_count() or 1,
                        help="Node processes for the simulator ceiling (default: one per core)")
    parser.add_argument("--no-ceiling", action="store_true", help="skip the simulator ceiling")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    sizes = [int(n) for n in str(args.num_envs).split(",") if n.strip()]
    backends = [b.strip() for b in args.backend.split(",") if b.strip()]
    if not sizes or min(sizes) < 1:
        parser.error("--num-envs needs positive integers")
    for backend in backends:
        for num_envs in sizes:
            record: dict[str, Any] = {
                "backend": backend, "num_envs": num_envs, "seconds": args.seconds,
                "battle_format": args.battle_format, "opponent": args.opponent,
                "servers": args.servers if backend == "server" else None,
            }
            record.update(env_throughput(num_envs, args.seconds, args.warmup, backend,
                                         args.servers, args.battle_format, args.opponent,
                                         args.seed))
            if not args.no_ceiling:
                record.update(sim_ceiling(args.seconds, args.sim_procs, min(args.warmup, 2.0),
                                          args.battle_format))
                record["ratio"] = record["env_steps_per_s"] / record["sim_turns_per_s"]
            record["machine"] = machine_info()
            print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
