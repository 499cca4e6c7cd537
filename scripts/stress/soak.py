#!/usr/bin/env python
"""Soak test: train for a given time while sampling the memory of every process; JSON.

    python scripts/stress/soak.py --minutes 30 --warmup 5 -- +experiment=lstm_ppo env.num_envs=8
    python scripts/stress/soak.py --minutes 30 --warmup 5 -- +experiment=lstm_ppo env.backend=server

Starts ``python -m trainer <overrides>`` (a real run, in a temporary run dir unless
``hydra.run.dir=`` is given) and, from its first logged iteration on, samples the RSS of
the trainer, each env worker and each Node process (simulator hosts or Showdown servers)
every ``--interval`` seconds, stops the run with SIGTERM (it saves) and prints, per
process, its RSS right after the warm-up and at the end and the growth in between
(``growth_pct``); ``max_growth_pct`` per role is the number to hold under a few percent.
Each end is the median of the samples in a ``--window``-minute window (a Node heap swings
by tens of percent between garbage collections, so one sample is noise), and
``slope_mb_per_min`` is the least-squares trend of all samples after the warm-up;
``series`` has every sample. A process started after the warm-up (a restart) is listed
with ``new: true`` and not counted.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from trainer.run.probe import last_iteration, processes_by_role

sys.path.append(str(Path(__file__).resolve().parents[1]))  # scripts/: the shared _cli (last)
from _cli import script_parser  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def sample(trainer: psutil.Process) -> dict[int, tuple[str, float]]:
    """``pid -> (role, RSS in MB)`` for the trainer and its descendants."""
    out: dict[int, tuple[str, float]] = {}
    for role, found in processes_by_role(trainer.pid).items():
        for process in found:
            try:
                out[process.pid] = (role, process.memory_info().rss / 2**20)
            except psutil.Error:
                continue
    return out


def summarize(
    pid: int, points: list[tuple[float, str, float]], warm_s: float, window_s: float
) -> dict[str, object]:
    """One process's entry: its RSS after the warm-up and at the end (window medians), the
    growth between them, the trend and every sample."""
    kind = points[0][1]
    after = [(t, rss) for t, _, rss in points if t >= warm_s]
    entry: dict[str, object] = {"pid": pid, "role": kind, "samples": len(points)}
    if points[0][0] > warm_s or len(after) < 2:
        entry |= {"new": True, "rss_mb_last": round(points[-1][2], 1)}
    else:
        first, last = after[0][0], after[-1][0]
        base = statistics.median(r for t, r in after if t <= first + window_s)
        end = statistics.median(r for t, r in after if t >= last - window_s)
        times = [t for t, _ in after]
        slope = (
            statistics.linear_regression(times, [r for _, r in after]).slope * 60
            if len(set(times)) > 1
            else 0.0
        )
        entry |= {
            "rss_mb_warm": round(base, 1),
            "rss_mb_end": round(end, 1),
            "rss_mb_peak": round(max(r for _, r in after), 1),
            "growth_pct": round(100 * (end - base) / base, 2),
            "slope_mb_per_min": round(slope, 3),
        }
    entry["series"] = [[round(t, 1), round(rss, 1)] for t, _, rss in points]
    return entry


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = script_parser(__doc__)
    parser.add_argument(
        "--minutes", type=float, default=30.0, help="training time to sample (default %(default)s)"
    )
    parser.add_argument(
        "--warmup",
        type=float,
        default=5.0,
        help="minutes before the baseline (default %(default)s)",
    )
    parser.add_argument(
        "--interval", type=float, default=10.0, help="seconds between samples (default %(default)s)"
    )
    parser.add_argument(
        "--window",
        type=float,
        default=2.0,
        help="minutes of samples whose median is each end of the growth (default %(default)s)",
    )
    parser.add_argument("overrides", nargs="*", help="trainer overrides (after --)")
    args = parser.parse_args(argv)
    if not 0 <= args.warmup < args.minutes:
        parser.error("--warmup must be in [0, --minutes)")
    if not 0 < args.window <= (args.minutes - args.warmup) / 2:
        parser.error("--window must be in (0, (--minutes - --warmup) / 2]")
    return args


Series = dict[int, list[tuple[float, str, float]]]


def sample_run(
    args: argparse.Namespace, command: list[str], run_dir: Path
) -> tuple[Series, int | None]:
    """Start the trainer, sample every process's memory for ``--minutes`` of training, then
    stop it with SIGTERM (it saves and closes its envs); the samples and its exit code."""
    errors = run_dir / "soak_stderr.log"  # a file, not a pipe nobody reads while it runs
    with errors.open("wb") as err:
        proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)
    trainer = psutil.Process(proc.pid)

    def ended_early() -> SystemExit:
        tail = errors.read_text(errors="replace")[-2000:]
        return SystemExit(f"the run ended early (code {proc.returncode}): {tail}")

    series: Series = {}
    try:
        # the clock starts when training is under way (an iteration logged): every worker
        # and simulator exists by then, however long the start took
        deadline = time.monotonic() + 600
        while last_iteration(run_dir) == 0:
            if proc.poll() is not None:
                raise ended_early()
            if time.monotonic() > deadline:
                raise SystemExit(f"no iteration logged in {run_dir} within 600 s")
            time.sleep(0.5)
        start = time.monotonic()
        while (elapsed := time.monotonic() - start) < args.minutes * 60:
            if proc.poll() is not None:
                raise ended_early()
            for pid, (kind, rss) in sample(trainer).items():
                series.setdefault(pid, []).append((elapsed, kind, rss))
            time.sleep(min(args.interval, max(args.minutes * 60 - elapsed, 0.0)))
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return series, proc.returncode


def role_summary(processes: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per role (main, worker, node...): the largest and median growth and the steepest
    slope among its processes that lived long enough to be measured."""
    roles: dict[str, dict[str, float]] = {}
    for kind in sorted({p["role"] for p in processes}):
        counted = [p for p in processes if p["role"] == kind and "growth_pct" in p]
        if counted:
            roles[kind] = {
                "processes": len(counted),
                "max_growth_pct": max(p["growth_pct"] for p in counted),
                "median_growth_pct": statistics.median(p["growth_pct"] for p in counted),
                "max_slope_mb_per_min": max(p["slope_mb_per_min"] for p in counted),
            }
    return roles


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    overrides = list(args.overrides)
    given = [o.split("=", 1)[1] for o in overrides if o.startswith("hydra.run.dir=")]
    run_dir = Path(given[-1] if given else tempfile.mkdtemp(prefix="maple_soak_"))
    if not given:
        overrides.append(f"hydra.run.dir={run_dir}")
    command = [sys.executable, "-m", "trainer", "tensorboard=false", *overrides]
    run_dir.mkdir(parents=True, exist_ok=True)
    series, exit_code = sample_run(args, command, run_dir)
    processes = [
        summarize(pid, points, args.warmup * 60, args.window * 60)
        for pid, points in sorted(series.items())
    ]
    print(
        json.dumps(
            {
                "command": command,
                "minutes": args.minutes,
                "warmup_minutes": args.warmup,
                "interval_s": args.interval,
                "window_minutes": args.window,
                "exit_code": exit_code,
                "roles": role_summary(processes),
                "processes": processes,
                "machine": {"cpu_count": psutil.cpu_count(), "loadavg": psutil.getloadavg()},
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
