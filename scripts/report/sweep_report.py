#!/usr/bin/env python
"""Summarise a Hydra sweep of ``python -m trainer -m ...``: a table and a PNG plot.

    python scripts/report/sweep_report.py multirun/2026-01-01/12-00-00_lstm_ppo [--out report.png]

For every run dir under the sweep dir (one with ``metrics.csv``) it reads the run's
overrides (``.hydra/overrides.yaml``) and reports, per setting: median SPS (first iteration
excluded: start-up), final return and win rate (mean over the last 10% of iterations),
steps and wall time. The table is printed and written as ``sweep_report.csv``; the plot
(``sweep_report.png``) shows SPS per setting and return / win rate against env steps.
"""

from __future__ import annotations

import csv
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import yaml  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

sys.path.append(str(Path(__file__).resolve().parents[1]))  # scripts/: the shared _cli (last)
from _cli import script_parser  # noqa: E402


@dataclass
class RunSummary:
    label: str
    run_dir: Path
    steps: list[int]
    returns: list[float]
    win_rates: list[float]
    sps: float
    final_return: float
    final_win_rate: float
    wall_s: float


def _float(value: str | None) -> float:
    try:
        return float(value) if value not in (None, "") else math.nan
    except ValueError:
        return math.nan


def _tail_mean(values: list[float], frac: float = 0.1) -> float:
    tail = values[-max(1, math.ceil(len(values) * frac)) :] if values else []
    tail = [v for v in tail if not math.isnan(v)]
    return statistics.fmean(tail) if tail else math.nan


def _overrides(run_dir: Path) -> list[str]:
    path = run_dir / ".hydra" / "overrides.yaml"
    if not path.is_file():
        return []
    return [str(o) for o in (yaml.safe_load(path.read_text()) or [])]


def load_runs(sweep_dir: Path) -> list[RunSummary]:
    """One summary per run dir under ``sweep_dir``, labelled by its varying overrides."""
    run_dirs = sorted({p.parent for p in sweep_dir.rglob("metrics.csv")})
    overrides = {d: _overrides(d) for d in run_dirs}
    common = set.intersection(*(set(o) for o in overrides.values())) if overrides else set()
    runs = []
    for run_dir in run_dirs:
        with (run_dir / "metrics.csv").open() as f:
            rows = list(csv.DictReader(f))
        if not rows:
            continue
        varying = [o for o in overrides[run_dir] if o not in common]
        label = " ".join(varying) or run_dir.name
        sps = [_float(r.get("sps")) for r in rows]
        returns = [_float(r.get("episode_return")) for r in rows]
        wins = [_float(r.get("win_rate")) for r in rows]
        steady = [s for s in (sps[1:] or sps) if not math.isnan(s)]
        runs.append(
            RunSummary(
                label=label,
                run_dir=run_dir,
                steps=[int(_float(r["global_step"])) for r in rows],
                returns=returns,
                win_rates=wins,
                sps=statistics.median(steady) if steady else math.nan,
                final_return=_tail_mean(returns),
                final_win_rate=_tail_mean(wins),
                wall_s=_float(rows[-1].get("wall_s")),
            )
        )
    return runs


def _fmt(value: float, spec: str) -> str:
    return "-" if math.isnan(value) else format(value, spec)


def write_table(runs: list[RunSummary], out_csv: Path, console: Console) -> None:
    table = Table(title=f"sweep: {len(runs)} runs")
    for name in ("setting", "median SPS", "final return", "final win rate", "steps", "wall s"):
        table.add_column(name, justify="left" if name == "setting" else "right")
    with out_csv.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            [
                "setting",
                "run_dir",
                "median_sps",
                "final_return",
                "final_win_rate",
                "steps",
                "wall_s",
            ]
        )
        for r in runs:
            writer.writerow(
                [
                    r.label,
                    str(r.run_dir),
                    r.sps,
                    r.final_return,
                    r.final_win_rate,
                    r.steps[-1],
                    r.wall_s,
                ]
            )
            table.add_row(
                r.label,
                _fmt(r.sps, ".0f"),
                _fmt(r.final_return, ".3f"),
                _fmt(r.final_win_rate, ".1%"),
                f"{r.steps[-1]:,}",
                _fmt(r.wall_s, ".0f"),
            )
    console.print(table)


def plot(runs: list[RunSummary], out_png: Path) -> None:
    has_wins = any(not math.isnan(w) for r in runs for w in r.win_rates)
    ncols = 3 if has_wins else 2
    fig, axes = plt.subplots(1, ncols, figsize=(6 * ncols, 4.5))
    labels = [r.label for r in runs]
    axes[0].barh(range(len(runs)), [r.sps for r in runs], color="tab:blue")
    axes[0].set_yticks(range(len(runs)), labels, fontsize=8)
    axes[0].invert_yaxis()
    axes[0].set_xlabel("median env steps / s (training)")
    axes[0].set_title("SPS per setting")
    for r in runs:
        axes[1].plot(r.steps, r.returns, label=r.label)
    axes[1].set_xlabel("env steps")
    axes[1].set_ylabel("episode return")
    axes[1].set_title("return")
    if has_wins:
        for r in runs:
            axes[2].plot(r.steps, r.win_rates, label=r.label)
        axes[2].set_xlabel("env steps")
        axes[2].set_ylabel("win rate")
        axes[2].set_ylim(0, 1)
        axes[2].set_title("win rate")
    axes[-1].legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("sweep_dir", type=Path, help="a Hydra multirun dir")
    parser.add_argument("--out", type=Path, default=None, help="PNG path (default: in sweep dir)")
    args = parser.parse_args(argv)
    if not args.sweep_dir.is_dir():
        print(f"error: {args.sweep_dir} is not a directory", file=sys.stderr)
        return 2
    runs = load_runs(args.sweep_dir)
    if not runs:
        print(f"error: no run with a metrics.csv under {args.sweep_dir}", file=sys.stderr)
        return 1
    out_png = args.out or args.sweep_dir / "sweep_report.png"
    write_table(runs, args.sweep_dir / "sweep_report.csv", Console())
    plot(runs, out_png)
    print(f"wrote {args.sweep_dir / 'sweep_report.csv'} and {out_png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
