#!/usr/bin/env python
"""Soak test: train for a given time while sampling the memory of every process; JSON.

    python scripts/soak.py --minutes 30 --warmup 5 -- +experiment=lstm_ppo env.num_envs=8
    python scripts/soak.py --minutes 30 --warmup 5 -- +experiment=lstm_ppo env.backend=server

Starts ``python -m trainer <overrides>`` (a real run, in a temporary run dir unless
``hydra.run.dir=`` is given), samples the RSS of the trainer, each env worker and each
Node process (simulator hosts or Showdown servers) every ``--interval`` seconds, stops the
run with SIGTERM (it saves) and prints, per process, its RSS at the end of the warm-up and
at the end and the growth in between (``growth_pct``); ``max_growth_pct`` per role is the
number to hold under a few percent. A process started after the warm-up (a restart) is
listed with ``new: true`` and not counted.
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

import psutil

REPO = Path(__file__).resolve().parent.parent


def role(process: psutil.Process, trainer_pid: int) -> str | None:
    """``trainer``, ``env_worker``, ``node`` or None (helpers such as the resource tracker)."""
    if process.pid == trainer_pid:
        return "trainer"
    try:
        name, cmdline = process.name(), " ".join(process.cmdline())
    except psutil.Error:
        return None
    if name == "node":
        return "node"
    if "spawn_main" in cmdline and "resource_tracker" not in cmdline:
        return "env_worker"
    return None


def sample(trainer: psutil.Process) -> dict[int, tuple[str, float]]:
    """``pid -> (role, RSS in MB)`` for the trainer and its descendants."""
    out: dict[int, tuple[str, float]] = {}
    try:
        processes = [trainer, *trainer.children(recursive=True)]
    except psutil.Error:
        return out
    for process in processes:
        kind = role(process, trainer.pid)
        if kind is None:
            continue
        try:
            out[process.pid] = (kind, process.memory_info().rss / 2**20)
        except psutil.Error:
            continue
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
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
    parser.add_argument("overrides", nargs="*", help="trainer overrides (after --)")
    args = parser.parse_args(argv)
    if not 0 <= args.warmup < args.minutes:
        parser.error("--warmup must be in [0, --minutes)")

    overrides = list(args.overrides)
    if not any(o.startswith("hydra.run.dir=") for o in overrides):
        overrides.append(f"hydra.run.dir={tempfile.mkdtemp(prefix='maple_soak_')}")
    command = [sys.executable, "-m", "trainer", "tensorboard=false", *overrides]
    proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    trainer = psutil.Process(proc.pid)
    start = time.monotonic()
    series: dict[int, list[tuple[float, str, float]]] = {}
    try:
        while (elapsed := time.monotonic() - start) < args.minutes * 60:
            if proc.poll() is not None:
                raise SystemExit(
                    f"the run ended early (code {proc.returncode}): "
                    f"{proc.stderr.read().decode(errors='replace')[-2000:]}"
                )
            for pid, (kind, rss) in sample(trainer).items():
                series.setdefault(pid, []).append((elapsed, kind, rss))
            time.sleep(min(args.interval, max(args.minutes * 60 - elapsed, 0.0)))
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # the trainer saves and closes its envs
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    warm_s = args.warmup * 60
    processes = []
    for pid, points in sorted(series.items()):
        kind = points[0][1]
        after = [(t, rss) for t, _, rss in points if t >= warm_s]
        entry: dict[str, object] = {"pid": pid, "role": kind, "samples": len(points)}
        if points[0][0] > warm_s or len(after) < 2:
            entry |= {"new": True, "rss_mb_last": round(points[-1][2], 1)}
        else:
            base, last = after[0][1], after[-1][1]
            entry |= {
                "rss_mb_warm": round(base, 1),
                "rss_mb_end": round(last, 1),
                "rss_mb_peak": round(max(r for _, r in after), 1),
                "growth_pct": round(100 * (last - base) / base, 2),
            }
        processes.append(entry)
    roles: dict[str, dict[str, float]] = {}
    for kind in sorted({p["role"] for p in processes}):
        growths = [p["growth_pct"] for p in processes if p["role"] == kind and "growth_pct" in p]
        if growths:
            roles[kind] = {
                "processes": len(growths),
                "max_growth_pct": max(growths),
                "median_growth_pct": statistics.median(growths),
            }
    print(
        json.dumps(
            {
                "command": command,
                "minutes": args.minutes,
                "warmup_minutes": args.warmup,
                "interval_s": args.interval,
                "exit_code": proc.returncode,
                "roles": roles,
                "processes": processes,
                "machine": {"cpu_count": psutil.cpu_count(), "loadavg": psutil.getloadavg()},
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
