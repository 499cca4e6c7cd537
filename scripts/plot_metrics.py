"""Learning curve of one run from its ``metrics.csv``: win rates (per opponent when the
run had a mix), episode return and, for kickstarted runs, the teacher agreement.

    python scripts/plot_metrics.py runs/kick1/metrics.csv models/attention_ppo_gen9random.png

Curves are smoothed with a moving average over ``--window`` iterations (win rates per
opponent are noisy: a 1024-step rollout ends only a few battles against each).
Prints the last window's means as JSON.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def _column(rows: list[dict[str, str]], key: str) -> np.ndarray:
    return np.array([float(r[key]) if r.get(key) not in (None, "") else np.nan for r in rows])


def smooth(values: np.ndarray, window: int) -> np.ndarray:
    """Trailing mean over the last ``window`` non-NaN values."""
    out = np.full_like(values, np.nan)
    for i in range(len(values)):
        recent = values[max(0, i - window + 1) : i + 1]
        recent = recent[~np.isnan(recent)]
        if len(recent):
            out[i] = recent.mean()
    return out


def training_minutes(wall_s: np.ndarray) -> float:
    """Minutes of training in all: ``wall_s`` restarts from 0 in each resumed segment, so
    the last value of every segment is added up."""
    wall = wall_s[~np.isnan(wall_s)]
    if not len(wall):
        return float("nan")
    segment_ends = np.append(wall[1:] < wall[:-1], True)
    return float(wall[segment_ends].sum()) / 60


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("metrics", type=Path, help="a run's metrics.csv")
    parser.add_argument("out", type=Path, help="PNG to write")
    parser.add_argument(
        "--window", type=int, default=20, help="moving-average iterations (default %(default)s)"
    )
    args = parser.parse_args()

    with args.metrics.open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit(f"{args.metrics}: no rows")
    steps = _column(rows, "global_step")
    win_keys = [k for k in rows[0] if k.startswith("win_rate/")] or ["win_rate"]
    extra = [k for k in ("teacher_agreement", "kickstart_coef") if k in rows[0]]

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    last: dict[str, float] = {}
    for key in win_keys:
        curve = smooth(_column(rows, key), args.window)
        top.plot(steps, curve, label=key.removeprefix("win_rate/"))
        last[key] = round(float(curve[-1]), 3)
    top.set_ylabel(f"win rate (mean of {args.window} iterations)")
    top.set_ylim(0, 1)
    top.grid(alpha=0.3)
    top.legend(loc="lower right")
    curve = smooth(_column(rows, "episode_return"), args.window)
    bottom.plot(steps, curve, label="episode return")
    last["episode_return"] = round(float(curve[-1]), 3)
    for key in extra:
        curve = smooth(_column(rows, key), args.window)
        bottom.plot(steps, curve, label=key)
        last[key] = round(float(curve[-1]), 3)
    bottom.set_xlabel("env steps")
    bottom.grid(alpha=0.3)
    bottom.legend(loc="lower right")
    minutes = training_minutes(_column(rows, "wall_s"))
    name = args.metrics.parent.name if args.metrics.name == "metrics.csv" else args.metrics.stem
    fig.suptitle(
        f"{name}: {int(steps[-1]):,} steps"
        + (f", {minutes:.0f} min" if not np.isnan(minutes) else "")
    )
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=100)
    print(json.dumps({"steps": int(steps[-1]), "last_window_means": last}))


if __name__ == "__main__":
    main()
