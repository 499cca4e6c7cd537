"""Learning curves of several runs on one PNG, to compare recipe or model variants.

    python scripts/report/compare_runs.py \\
        attention=runs/att/metrics.csv lstm=runs/lstm/metrics.csv \\
        --out docs/img/recipe.png

One panel per curve (win rate against each opponent the runs share, teacher agreement),
every run a line in each, against env steps; the x axis can be training minutes instead
(``--x minutes``). Curves are smoothed like ``plot_metrics.py``. Prints, per run, the last
window's means and the steps and minutes reached, as JSON.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from trainer.run.curves import (  # noqa: E402
    column,
    cumulative_seconds,
    read_metrics,
    smooth,
)

sys.path.append(str(Path(__file__).resolve().parents[1]))  # scripts/: the shared _cli (last)
from _cli import print_json, script_parser  # noqa: E402


def _run(spec: str) -> tuple[str, list[dict[str, str]]]:
    label, sep, path = spec.partition("=")
    if not sep or not label or not path:
        raise SystemExit(f"expected LABEL=PATH/metrics.csv, got {spec!r}")
    metrics = Path(path)
    if metrics.is_dir():
        metrics = metrics / "metrics.csv"
    if not metrics.is_file():
        raise SystemExit(f"{label}: no metrics file at {metrics}")
    rows = read_metrics(metrics)
    if not rows:
        raise SystemExit(f"{label}: {metrics} has no rows")
    return label, rows


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("runs", nargs="+", help="LABEL=PATH (a metrics.csv or its run dir)")
    parser.add_argument("--out", type=Path, required=True, help="PNG to write")
    parser.add_argument(
        "--window", type=int, default=20, help="moving-average iterations (default %(default)s)"
    )
    parser.add_argument(
        "--x",
        choices=("steps", "minutes"),
        default="steps",
        help="x axis: env steps or training minutes (default %(default)s)",
    )
    args = parser.parse_args(argv)

    runs = [_run(spec) for spec in args.runs]
    keys = [k for k in runs[0][1][0] if k.startswith("win_rate/")] or ["win_rate"]
    keys = [k for k in keys if all(k in rows[0] for _, rows in runs)]
    if any("teacher_agreement" in rows[0] for _, rows in runs):
        keys.append("teacher_agreement")
    fig, axes = plt.subplots(len(keys), 1, figsize=(8, 2.6 * len(keys)), sharex=True, squeeze=False)
    summary: dict[str, dict[str, float]] = {}
    for label, rows in runs:
        steps = column(rows, "global_step")
        minutes = cumulative_seconds(column(rows, "wall_s")) / 60
        x = steps if args.x == "steps" else minutes
        summary[label] = {"steps": int(steps[-1]), "minutes": round(float(minutes[-1]), 1)}
        for ax, key in zip(axes[:, 0], keys, strict=True):
            if key not in rows[0]:
                continue
            curve = smooth(column(rows, key), args.window)
            ax.plot(x, curve, label=label)
            summary[label][key] = round(float(curve[-1]), 3)
    for ax, key in zip(axes[:, 0], keys, strict=True):
        ax.set_ylabel(key.removeprefix("win_rate/"))
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    axes[-1, 0].set_xlabel("env steps" if args.x == "steps" else "training minutes")
    fig.suptitle(f"smoothed over {args.window} iterations")
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=100)
    print_json(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
