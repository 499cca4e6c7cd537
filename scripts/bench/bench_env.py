#!/usr/bin/env python
"""Env throughput next to the raw simulator's ceiling, measured side by side.

For every backend and every N in ``--num-envs`` this runs random legal (masked) actions
through ``mapleenv.make_vector_env(N, backend=...)`` against the ``random`` opponent for
``--seconds`` (after ``--warmup`` seconds not counted), then, right after on the same
machine, the simulator ceiling: random-vs-random battles in-process with the npm package's
``BattleStream`` (``mapleenv/js/sim_ceiling.js``), one Node process per core. One JSON line
per (backend, N):

    python scripts/bench/bench_env.py --num-envs 1,4,8,16 --seconds 20 --backend server,direct

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

``--shape card`` measures the design card's shape instead: a plain
``gymnasium.vector.AsyncVectorEnv`` (spawn) over ``gym.make("mapleenv/Showdown-v0", ...)``,
one env per worker, each with its own Node host (direct) or embedded server (server), env i
seeded seed + i. ``--shape maple,card`` keeps both up and alternates them in every round
(with the ceiling); the card's line adds ``card_vs_maple``, the median of the per-round
ratios of card steps/s to ``make_vector_env`` steps/s. Every line names its ``shape``.
An env's CPU leaves out the processes of the other shape and of the ceiling (idle then).

``--battle-format`` takes several formats, comma-separated: each gets its envs (a doubles
format with ``encoder="doubles_basic"``) and its own ceiling, all alternating in every round, one
line per format. With a singles and a doubles format it adds a ``doubles_vs_singles`` line:
the median of the per-round ratios of doubles to singles env steps/s (the issue's target
is >= 0.6), the CPU per step ratio, and the simulator's own doubles/singles turns/s and CPU
per turn (each format's ceiling):

    python scripts/bench/bench_env.py --backend direct --num-envs 8 \
        --battle-format gen9randombattle,gen9randomdoublesbattle
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from mapleenv.measure import (
    Ceiling,
    machine_info,
    process_cpu,
)
from mapleenv.showdown.formats import is_doubles_format

sys.path.append(str(Path(__file__).resolve().parents[1]))  # scripts/: the shared _cli (last)
from _cli import print_json, script_parser  # noqa: E402


def random_masked_actions(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row of ``masks`` ([N, A], nonzero = legal)."""
    legal = masks.astype(bool)
    # Random scores, illegal ones pushed below every legal one: argmax is a uniform legal pick.
    scores = rng.random(legal.shape) + legal
    return scores.argmax(axis=1)


SHAPES = ("maple", "card")


def descendant_pids() -> set[int]:
    return {child.pid for child in psutil.Process().children(recursive=True)}


def card_env(**settings: Any) -> Any:
    """One env as the design card makes it (in the worker: the import registers the id)."""
    import gymnasium as gym

    import mapleenv

    return gym.make(mapleenv.ENV_ID, **settings)


def make_envs(shape: str, num_envs: int, args: argparse.Namespace, backend: str, fmt: str) -> Any:
    """``make_vector_env(N)`` (``maple``) or the design card's ``AsyncVectorEnv`` over
    ``gym.make`` (``card``) of format ``fmt``, random opponent, env i seeded ``seed + i``."""
    common: dict[str, Any] = dict(battle_format=fmt, opponent=args.opponent)
    if is_doubles_format(fmt):
        common["encoder"] = "doubles_basic"
    if shape == "card":
        import gymnasium as gym

        fns = [
            functools.partial(card_env, backend=backend, seed=args.seed + i, **common)
            for i in range(num_envs)
        ]
        return gym.vector.AsyncVectorEnv(fns, context="spawn")
    import mapleenv

    return mapleenv.make_vector_env(
        num_envs,
        backend=backend,
        servers=args.servers,
        sim_hosts=args.sim_hosts,
        seed=args.seed,
        **common,
    )


class _VectorRun:
    """A vector env stepped with random masked actions, measured in time slices."""

    def __init__(self, shape: str, num_envs: int, args: argparse.Namespace, backend: str, fmt: str):
        self.shape = shape
        self.fmt = fmt
        self.key = (shape, fmt)
        self.num_envs = num_envs
        self.rng = np.random.default_rng(args.seed)
        t_start = time.perf_counter()
        before = descendant_pids()
        self.envs = make_envs(shape, num_envs, args, backend, fmt)
        try:
            self.obs, _ = self.envs.reset()
        except BaseException:
            self.envs.close()
            raise
        self.startup_s = time.perf_counter() - t_start
        self.pids = descendant_pids() - before  # its workers, Node hosts or servers
        self.others: set[int] = set()  # the other runs' processes, idle while this one runs
        self.autoreset = np.zeros(num_envs, dtype=bool)
        self.episodes = 0

    def run(self, seconds: float) -> tuple[float, dict[str, float]]:
        """Step for ``seconds``; agent decisions applied per second (autoreset steps,
        where an env only starts its next battle, are not counted) and CPU ms per step
        of the env by kind of process (main, workers, node) and in total."""
        steps = 0
        cpu0 = process_cpu(exclude=self.others)
        t0 = time.perf_counter()
        end = t0 + seconds
        while time.perf_counter() < end:
            actions = random_masked_actions(self.obs["action_mask"], self.rng)
            self.obs, _, terminated, truncated, _ = self.envs.step(actions)
            steps += int(self.num_envs - self.autoreset.sum())
            self.autoreset = terminated | truncated
            self.episodes += int(self.autoreset.sum())
        elapsed = time.perf_counter() - t0
        cpu1 = process_cpu(exclude=self.others)
        per_step = {kind: 1e3 * (cpu1[kind] - cpu0[kind]) / max(steps, 1) for kind in cpu0}
        per_step["total"] = sum(per_step.values())
        return steps / elapsed, per_step

    def close(self) -> None:
        self.envs.close()


def measure(
    num_envs: int, args: argparse.Namespace, backend: str, ceilings: dict[str, Ceiling]
) -> list[dict[str, Any]]:
    """Each (format, shape)'s env steps/s and each format's simulator turns/s in
    alternating slices (the runs' order flips every round); one record per run, with
    medians and ratios."""
    runs: list[_VectorRun] = []
    env_rates: dict[tuple[str, str], list[float]] = {}
    env_cpu: dict[tuple[str, str], list[dict[str, float]]] = {}
    sim_rates: dict[str, list[float]] = {fmt: [] for fmt in ceilings}
    sim_cpu: dict[str, list[float]] = {fmt: [] for fmt in ceilings}
    try:
        for fmt in args.formats:
            for shape in args.shapes:
                runs.append(_VectorRun(shape, num_envs, args, backend, fmt))
                runs[-1].run(args.warmup)
                env_rates[runs[-1].key], env_cpu[runs[-1].key] = [], []
        idle = {proc.pid for ceiling in ceilings.values() for proc in ceiling.procs}
        for run in runs:
            run.others = idle.union(*(other.pids for other in runs if other is not run))
        slice_s = args.seconds / args.rounds
        for i in range(args.rounds):
            for run in runs if i % 2 == 0 else runs[::-1]:
                rate, cpu = run.run(slice_s)
                env_rates[run.key].append(rate)
                env_cpu[run.key].append(cpu)
            for fmt, ceiling in ceilings.items():
                result = ceiling.measure(slice_s)
                sim_rates[fmt].append(result["sim_turns_per_s"])
                sim_cpu[fmt].append(result["sim_cpu_ms_per_turn"])
    finally:
        for run in runs:
            run.close()
    records = [
        shape_record(
            run,
            env_rates[run.key],
            env_cpu[run.key],
            sim_rates.get(run.fmt, []),
            sim_cpu.get(run.fmt, []),
            args,
        )
        for run in runs
    ]
    for fmt in args.formats:
        if {"maple", "card"} <= set(args.shapes):
            pairs = zip(env_rates[("card", fmt)], env_rates[("maple", fmt)], strict=True)
            record = records[[run.key for run in runs].index(("card", fmt))]
            record["card_vs_maple"] = float(np.median([card / maple for card, maple in pairs]))
    return records


def doubles_vs_singles(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each shape measured in one singles and one doubles format: doubles over singles
    env steps/s (median of the per-round ratios), CPU per step and, with the ceilings, the
    simulator's turns/s and CPU per turn."""
    out = []
    for shape in dict.fromkeys(r["shape"] for r in records):
        by_kind = {is_doubles_format(r["battle_format"]): r for r in records if r["shape"] == shape}
        if set(by_kind) != {False, True}:
            continue
        single, double = by_kind[False], by_kind[True]
        ratio = float(
            np.median(
                [
                    d / s
                    for d, s in zip(
                        double["env_steps_per_s_rounds"],
                        single["env_steps_per_s_rounds"],
                        strict=True,
                    )
                ]
            )
        )
        line: dict[str, Any] = {
            "compare": "doubles_vs_singles",
            **{k: single[k] for k in ("backend", "num_envs", "shape")},
            "singles": single["battle_format"],
            "doubles": double["battle_format"],
            "env_steps_per_s_ratio": round(ratio, 3),
            "env_cpu_ms_per_step_ratio": round(
                double["env_cpu_ms_per_step"] / single["env_cpu_ms_per_step"], 3
            ),
            "target": 0.6,
            "meets_target": ratio >= 0.6,
        }
        if "sim_turns_per_s" in single and "sim_turns_per_s" in double:
            line["sim_turns_per_s_ratio"] = round(
                double["sim_turns_per_s"] / single["sim_turns_per_s"], 3
            )
            line["sim_cpu_ms_per_turn_ratio"] = round(
                double["sim_cpu_ms_per_turn"] / single["sim_cpu_ms_per_turn"], 3
            )
        out.append(line)
    return out


def shape_record(
    run: _VectorRun,
    env_rates: list[float],
    env_cpu: list[dict[str, float]],
    sim_rates: list[float],
    sim_cpu: list[float],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """One shape's medians, CPU per step by kind and, with the ceiling, its ratios."""
    record: dict[str, Any] = {
        "battle_format": run.fmt,
        "shape": run.shape,
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


def build_parser() -> argparse.ArgumentParser:
    parser = script_parser(__doc__)
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
        "--battle-format",
        "--battle-formats",
        default="gen9randombattle",
        help="battle format, or several comma-separated (each measured, alternating; a "
        "singles and a doubles one add a doubles_vs_singles line) (default %(default)s)",
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
    parser.add_argument(
        "--shape",
        default="maple",
        help="comma-separated: maple (make_vector_env), card (AsyncVectorEnv over gym.make, "
        "the design card's shape); both alternate in the rounds (default %(default)s)",
    )
    return parser


def header(
    backend: str, num_envs: int, shape: str, fmt: str, args: argparse.Namespace
) -> dict[str, Any]:
    """The settings part of a JSON line."""
    card = shape == "card"  # one Node host or embedded server per env
    sim_hosts = args.sim_hosts if args.sim_hosts is not None else os.cpu_count() or 1
    return {
        "backend": backend,
        "num_envs": num_envs,
        "seconds": args.seconds,
        "battle_format": fmt,
        "opponent": args.opponent,
        "servers": (num_envs if card else args.servers) if backend == "server" else None,
        "sim_hosts": (num_envs if card else min(sim_hosts, num_envs))
        if backend == "direct"
        else None,
        "shape": shape,
    }


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run cleanups on kill

    sizes = [int(n) for n in str(args.num_envs).split(",") if n.strip()]
    backends = [b.strip() for b in args.backend.split(",") if b.strip()]
    args.shapes = list(dict.fromkeys(s.strip() for s in args.shape.split(",") if s.strip()))
    if not sizes or min(sizes) < 1:
        parser.error("--num-envs needs positive integers")
    if not args.shapes or not set(args.shapes) <= set(SHAPES):
        parser.error(f"--shape takes {', '.join(SHAPES)} (comma-separated), got {args.shape!r}")
    args.formats = list(
        dict.fromkeys(f.strip() for f in args.battle_format.split(",") if f.strip())
    )
    if not args.formats:
        parser.error("--battle-format needs at least one format")
    ceilings: dict[str, Ceiling] = {}
    try:
        if not args.no_ceiling:
            for fmt in args.formats:
                ceilings[fmt] = Ceiling(args.sim_procs, fmt, args.ceiling_warmup)
        for backend in backends:
            for num_envs in sizes:
                lines = [
                    {**header(backend, num_envs, r["shape"], r["battle_format"], args), **r}
                    for r in measure(num_envs, args, backend, ceilings)
                ]
                for line in lines:
                    line["machine"] = machine_info()
                    print_json(line)
                for line in doubles_vs_singles(lines):
                    print_json(line)
    finally:
        for ceiling in ceilings.values():
            ceiling.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
