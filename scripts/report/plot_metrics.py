"""Learning curve of one run from its ``metrics.csv``: win rates (per opponent when the
run had a mix; against the league and its hardest member for league runs), episode return
and, for kickstarted runs, the teacher agreement; steps below, training minutes above.

    python scripts/report/plot_metrics.py runs/kick1/metrics.csv models/attention_ppo_gen9random.png

Curves are smoothed with a moving average over ``--window`` iterations (win rates per
opponent are noisy: a 1024-step rollout ends only a few battles against each).
Prints the last window's means as JSON.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import sys

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from trainer.run.curves import (  # noqa: E402
    column,
    cumulative_seconds,
    extended_interp,
    read_metrics,
    smooth,
    training_minutes,
)

sys.path.append(str(Path(__file__).resolve().parents[1]))  # scripts/: the shared _cli (last)
from _cli import print_json, script_parser  # noqa: E402

_LEAGUE = ("selfplay/league_win_rate", "selfplay/hardest_win_rate")


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument("metrics", type=Path, help="a run's metrics.csv")
    parser.add_argument("out", type=Path, help="PNG to write")
    parser.add_argument(
        "--window", type=int, default=20, help="moving-average iterations (default %(default)s)"
    )
    args = parser.parse_args()

    rows = read_metrics(args.metrics)
    if not rows:
        raise SystemExit(f"{args.metrics}: no rows")
    steps = column(rows, "global_step")
    win_keys = [k for k in rows[0] if k.startswith("win_rate/")] or ["win_rate"]
    win_keys += [k for k in _LEAGUE if k in rows[0]]
    extra = [k for k in ("teacher_agreement", "kickstart_coef") if k in rows[0]]

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    last: dict[str, float] = {}
    for key in win_keys:
        curve = smooth(column(rows, key), args.window)
        style = "--" if key.startswith("selfplay/") else "-"
        top.plot(steps, curve, style, label=key.split("/")[-1])
        last[key] = round(float(curve[-1]), 3)
    top.set_ylabel(f"win rate (mean of {args.window} iterations)")
    top.set_ylim(0, 1)
    top.grid(alpha=0.3)
    top.legend(loc="lower right")
    curve = smooth(column(rows, "episode_return"), args.window)
    bottom.plot(steps, curve, label="episode return")
    last["episode_return"] = round(float(curve[-1]), 3)
    for key in extra:
        curve = smooth(column(rows, key), args.window)
        bottom.plot(steps, curve, label=key)
        last[key] = round(float(curve[-1]), 3)
    bottom.set_xlabel("env steps")
    bottom.grid(alpha=0.3)
    bottom.legend(loc="lower right")
    wall = column(rows, "wall_s")
    minutes = training_minutes(wall)
    _minutes_axis(top, steps, cumulative_seconds(wall) / 60)
    name = args.metrics.parent.name if args.metrics.name == "metrics.csv" else args.metrics.stem
    fig.suptitle(
        f"{name}: {int(steps[-1]):,} steps"
        + (f", {minutes:.0f} min" if not np.isnan(minutes) else "")
    )
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=100)
    print_json({"steps": int(steps[-1]), "last_window_means": last})


def _minutes_axis(ax: plt.Axes, steps: np.ndarray, minutes: np.ndarray) -> None:
    """Training minutes (resumed segments added up) on the top edge, read off the steps."""
    keep = ~np.isnan(minutes)
    if keep.sum() < 2:
        return
    s, m = steps[keep], minutes[keep]
    axis = ax.secondary_xaxis("top", functions=(extended_interp(s, m), extended_interp(m, s)))
    axis.set_xlabel("training minutes")


if __name__ == "__main__":
    main()
