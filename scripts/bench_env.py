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
env only starts a new battle, are left out). The env and the ceiling are measured in
``--rounds`` alternating slices of ``seconds / rounds`` (the env stays up, idle, while the
ceiling runs, and the ceiling's Node processes stay up, idle, while the env runs, their
JIT warm), so both see the same machine load; the line reports the medians and the
median of the per-round ratios ``env_steps_per_s / sim_turns_per_s``.

On a shared, loaded machine the scheduler gives the env's many processes a larger share
of the CPU than the ceiling's few, which flatters ``ratio``. ``cpu_ratio`` does not depend
on that share: ``sim_cpu_ms_per_turn / env_cpu_ms_per_step``, the CPU time (all threads
and processes: main, workers, Node hosts or servers) per simulator turn and per env step.
When the env keeps every core busy (N large enough), ``ratio`` on a quiet machine is
about ``cpu_ratio``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from typing import Any

import numpy as np

from mapleenv.measure import (
    Ceiling,
    machine_info,
    process_cpu,
)


def random_masked_actions(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row of ``masks`` ([N, A], nonzero = legal)."""
    legal = masks.astype(bool)
    # Random scores, illegal ones pushed below every legal one: argmax is a uniform legal pick.
    scores = rng.random(legal.shape) + legal
    return scores.argmax(axis=1)


class _VectorRun:
    """A vector env stepped with random masked actions, measured in time slices."""

    def __init__(
        self,
        num_envs: int,
        backend: str,
        servers: int,
        sim_hosts: int | None,
        battle_format: str,
        opponent: str,
        seed: int,
    ):
        import mapleenv

        self.num_envs = num_envs
        self.rng = np.random.default_rng(seed)
        t_start = time.perf_counter()
        common = dict(battle_format=battle_format, opponent=opponent, seed=seed)
        self.envs = mapleenv.make_vector_env(
            num_envs, backend=backend, servers=servers, sim_hosts=sim_hosts, **common
        )
        try:
            self.obs, _ = self.envs.reset()
        except BaseException:
            self.envs.close()
            raise
        self.startup_s = time.perf_counter() - t_start
        self.autoreset = np.zeros(num_envs, dtype=bool)
        self.episodes = 0

    def run(self, seconds: float) -> tuple[float, dict[str, float]]:
        """Step for ``seconds``; agent decisions applied per second (autoreset steps,
        where an env only starts its next battle, are not counted) and CPU ms per step
        of the env by kind of process (main, workers, node) and in total."""
        steps = 0
        cpu0 = process_cpu()
        t0 = time.perf_counter()
        end = t0 + seconds
        while time.perf_counter() < end:
            actions = random_masked_actions(self.obs["action_mask"], self.rng)
            self.obs, _, terminated, truncated, _ = self.envs.step(actions)
            steps += int(self.num_envs - self.autoreset.sum())
            self.autoreset = terminated | truncated
            self.episodes += int(self.autoreset.sum())
        elapsed = time.perf_counter() - t0
        cpu1 = process_cpu()
        per_step = {kind: 1e3 * (cpu1[kind] - cpu0[kind]) / max(steps, 1) for kind in cpu0}
        per_step["total"] = sum(per_step.values())
        return steps / elapsed, per_step

    def close(self) -> None:
        self.envs.close()


def measure(
    num_envs: int, args: argparse.Namespace, backend: str, ceiling: Ceiling | None
) -> dict[str, Any]:
    """Env steps/s and simulator turns/s in alternating slices; medians and their ratio."""
    run = _VectorRun(
        num_envs,
        backend,
        args.servers,
        args.sim_hosts,
        args.battle_format,
        args.opponent,
        args.seed,
    )
    env_rates: list[float] = []
    env_cpu: list[dict[str, float]] = []
    sim_rates: list[float] = []
    sim_cpu: list[float] = []
    try:
        run.run(args.warmup)
        slice_s = args.seconds / args.rounds
        for _ in range(args.rounds):
            rate, cpu = run.run(slice_s)
            env_rates.append(rate)
            env_cpu.append(cpu)
            if ceiling is not None:
                result = ceiling.measure(slice_s)
                sim_rates.append(result["sim_turns_per_s"])
                sim_cpu.append(result["sim_cpu_ms_per_turn"])
    finally:
        run.close()
    record: dict[str, Any] = {
        "env_steps_per_s": float(np.median(env_rates)),
        "env_steps_per_s_rounds": [round(r, 1) for r in env_rates],
        "env_cpu_ms_per_step": float(np.median([c["total"] for c in env_cpu])),
        "env_cpu_ms_per_step_by_kind": {
            kind: round(float(np.median([c[kind] for c in env_cpu])), 3)
            for kind in ("main", "workers", "node")
        },
        "episodes": run.episodes,
        "startup_s": round(run.startup_s, 2),
    }
    if sim_rates:
        record.update(
            {
                "sim_turns_per_s": float(np.median(sim_rates)),
                "sim_turns_per_s_rounds": [round(r, 1) for r in sim_rates],
                "sim_cpu_ms_per_turn": float(np.median(sim_cpu)),
                "sim_procs": args.sim_procs,
                "ratio": float(
                    np.median([e / s for e, s in zip(env_rates, sim_rates, strict=True)])
                ),
                "cpu_ratio": float(np.median(sim_cpu) / np.median([c["total"] for c in env_cpu])),
            }
        )
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--num-envs", default="8", help="comma-separated N values, e.g. 1,4,8,16")
    parser.add_argument(
        "--seconds",
        type=float,
        default=20.0,
        help="measured seconds per N, for the env and again for the ceiling",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="alternate env and ceiling slices this many times (medians)",
    )
    parser.add_argument(
        "--warmup",
        type=float,
        default=60.0,
        help="unmeasured seconds of each env before its rounds (its Node "
        "hosts or servers warm up like the ceiling: about a minute)",
    )
    parser.add_argument(
        "--ceiling-warmup",
        type=float,
        default=60.0,
        help="unmeasured seconds of the ceiling at start (its turns/s still "
        "rises for about a minute on a quiet 2-core VM)",
    )
    parser.add_argument(
        "--backend", default="direct,server", help="comma-separated backends (direct, server)"
    )
    parser.add_argument("--servers", type=int, default=1, help="Showdown servers (server backend)")
    parser.add_argument(
        "--sim-hosts",
        type=int,
        default=None,
        help="direct backend: shared simulator hosts (default: one per core; "
        "0: one Node host per env)",
    )
    parser.add_argument(
        "--battle-format", default="gen9randombattle", help="battle format (default %(default)s)"
    )
    parser.add_argument(
        "--opponent", default="random", help="the envs' opponent name (default %(default)s)"
    )
    parser.add_argument(
        "--sim-procs",
        type=int,
        default=os.cpu_count() or 1,
        help="Node processes for the simulator ceiling (default: one per core)",
    )
    parser.add_argument("--no-ceiling", action="store_true", help="skip the simulator ceiling")
    parser.add_argument(
        "--seed", type=int, default=0, help="env i is seeded seed + i (default %(default)s)"
    )
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run cleanups on kill

    sizes = [int(n) for n in str(args.num_envs).split(",") if n.strip()]
    backends = [b.strip() for b in args.backend.split(",") if b.strip()]
    if not sizes or min(sizes) < 1:
        parser.error("--num-envs needs positive integers")
    ceiling = (
        None
        if args.no_ceiling
        else Ceiling(args.sim_procs, args.battle_format, args.ceiling_warmup)
    )
    try:
        for backend in backends:
            for num_envs in sizes:
                record: dict[str, Any] = {
                    "backend": backend,
                    "num_envs": num_envs,
                    "seconds": args.seconds,
                    "battle_format": args.battle_format,
                    "opponent": args.opponent,
                    "servers": args.servers if backend == "server" else None,
                    "sim_hosts": (
                        min(
                            args.sim_hosts if args.sim_hosts is not None else os.cpu_count() or 1,
                            num_envs,
                        )
                        if backend == "direct"
                        else None
                    ),
                }
                record.update(measure(num_envs, args, backend, ceiling))
                record["machine"] = machine_info()
                print(json.dumps(record), flush=True)
    finally:
        if ceiling is not None:
            ceiling.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
