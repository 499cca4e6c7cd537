#!/usr/bin/env python
"""An ablation table: the runs of one or more Hydra sweeps grouped by setting, seeds pooled.

    python -m trainer -m +experiment=league_ppo max_minutes=20 seed=1,2 env.encoder=rich,rich2
    python scripts/report/ablation_report.py multirun/2026-11-26/12-00-00 \\
        --evaluate heuristic,calc --battles 200 --out ablation.md

A run is a directory with a ``metrics.csv``; its setting is its Hydra overrides less those
all runs share and less ``seed=`` (no override left: ``base``). Per setting: the seeds, the
training win rates at the end of each run (mean of the last ``--window`` iterations, over
the seeds) and, with ``--evaluate``, each run's last checkpoint evaluated by
``python -m trainer.evaluate`` (results kept in ``<run>/ablation_eval.json`` and reused when
they already cover the opponents and battles), wins pooled over the seeds with a Wilson
interval and each seed's own rate beside it, so a difference two seeds disagree on shows.
Prints the table, writes it as Markdown (``--out``) and prints one JSON line.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from rich.console import Console
from rich.table import Table

from trainer.evaluation import wilson_interval
from trainer.run.curves import column, read_metrics, training_minutes

sys.path.append(str(Path(__file__).resolve().parents[1]))  # scripts/: the shared _cli (last)
from _cli import print_json, script_parser  # noqa: E402

TRAINING = ("win_rate/heuristic", "selfplay/league_win_rate", "selfplay/hardest_win_rate")
EVAL_FILE = "ablation_eval.json"


@dataclass
class Run:
    """One training run: its setting, seed, end-of-run training means and evaluation."""

    run_dir: Path
    overrides: list[str]
    seed: str = "?"
    steps: int = 0
    minutes: float = math.nan
    training: dict[str, float] = field(default_factory=dict)
    evaluation: dict[str, dict[str, Any]] = field(default_factory=dict)


def _overrides(run_dir: Path) -> list[str]:
    path = run_dir / ".hydra" / "overrides.yaml"
    return [str(o) for o in (yaml.safe_load(path.read_text()) or [])] if path.is_file() else []


def _tail_mean(values: np.ndarray, window: int) -> float:
    values = values[~np.isnan(values)][-window:]
    return float(values.mean()) if len(values) else math.nan


def load_run(run_dir: Path, window: int) -> Run:
    """The run in ``run_dir``: its overrides, seed and the last ``window`` iterations' means."""
    rows = read_metrics(run_dir)
    overrides = _overrides(run_dir)
    seeds = [o.split("=", 1)[1] for o in overrides if o.startswith("seed=")]
    run = Run(run_dir, overrides, seed=seeds[-1] if seeds else "?")
    if rows:
        run.steps = int(float(rows[-1]["global_step"]))
        run.minutes = training_minutes(column(rows, "wall_s"))
        run.training = {k: _tail_mean(column(rows, k), window) for k in TRAINING if k in rows[0]}
    return run


def find_runs(paths: list[Path], window: int) -> list[Run]:
    """Every run dir (one with a ``metrics.csv``) under ``paths``, sorted."""
    dirs = sorted({m.parent for p in paths for m in p.rglob("metrics.csv")})
    return [load_run(d, window) for d in dirs]


def label(run: Run, common: set[str]) -> str:
    varying = [o for o in run.overrides if o not in common and not o.startswith("seed=")]
    return " ".join(varying) or "base"


def _covered(path: Path, opponents: list[str], battles: int) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    results = json.loads(path.read_text()).get("opponents", {})
    if all(results.get(o, {}).get("battles", 0) >= battles for o in opponents):
        return results
    return None


def evaluate(run: Run, opponents: list[str], battles: int, extra: list[str]) -> None:
    """``run.evaluation``: its last checkpoint against ``opponents`` (kept in the run dir)."""
    path = run.run_dir / EVAL_FILE
    results = _covered(path, opponents, battles)
    if results is None:
        checkpoint = run.run_dir / "checkpoints" / "last.pt"
        if not checkpoint.is_file():
            raise SystemExit(f"{run.run_dir}: no checkpoints/last.pt to evaluate")
        command = [
            sys.executable,
            "-m",
            "trainer.evaluate",
            f"checkpoint={checkpoint}",
            f"opponents=[{','.join(opponents)}]",
            f"battles={battles}",
            f"output={path}",
            f"hydra.run.dir={run.run_dir / 'ablation_eval'}",
            *extra,
        ]
        proc = subprocess.run(command, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["(no output)"]
            raise SystemExit(f"{run.run_dir}: evaluation failed: {tail[0]}")
        results = _covered(path, opponents, battles)
        if results is None:
            raise SystemExit(f"{run.run_dir}: {path} lacks the evaluated opponents")
    run.evaluation = {o: results[o] for o in opponents}


def summarize(runs: list[Run], opponents: list[str]) -> list[dict[str, Any]]:
    """One row per setting, in order of first appearance: seeds, training means, pooled
    evaluation (wins, battles, rate, Wilson interval, each seed's rate)."""
    common = set.intersection(*(set(r.overrides) for r in runs)) if runs else set()
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(label(run, common), []).append(run)
    rows = []
    for name, members in groups.items():
        row: dict[str, Any] = {
            "setting": name,
            "seeds": [r.seed for r in members],
            "steps": int(np.median([r.steps for r in members])),
            "minutes": float(np.nanmedian([r.minutes for r in members])),
            "training": {
                k: float(np.nanmean([r.training.get(k, math.nan) for r in members]))
                for k in TRAINING
                if any(not math.isnan(r.training.get(k, math.nan)) for r in members)
            },
            "evaluation": {},
        }
        for opponent in opponents:
            wins = sum(int(r.evaluation[opponent]["wins"]) for r in members)
            battles = sum(int(r.evaluation[opponent]["battles"]) for r in members)
            low, high = wilson_interval(wins, battles)
            row["evaluation"][opponent] = {
                "wins": wins,
                "battles": battles,
                "win_rate": wins / battles if battles else math.nan,
                "ci": [low, high],
                "per_seed": [r.evaluation[opponent]["win_rate"] for r in members],
            }
        rows.append(row)
    return rows


def _pct(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.1%}"


def cells(row: dict[str, Any], opponents: list[str]) -> list[str]:
    """The table cells of one setting (console and Markdown alike)."""
    out = [row["setting"], ",".join(row["seeds"]), f"{row['steps']:,}", f"{row['minutes']:.0f}"]
    out += [_pct(row["training"].get(k, math.nan)) for k in TRAINING]
    for opponent in opponents:
        e = row["evaluation"][opponent]
        seeds = "/".join(f"{r:.0%}" for r in e["per_seed"])
        out.append(f"{_pct(e['win_rate'])} [{e['ci'][0]:.0%}–{e['ci'][1]:.0%}] ({seeds})")
    return out


def headers(opponents: list[str]) -> list[str]:
    train = [f"train {k.split('/')[-1].replace('_win_rate', '')}" for k in TRAINING]
    return ["setting", "seeds", "steps", "min", *train, *(f"vs {o} (per seed)" for o in opponents)]


def markdown(rows: list[dict[str, Any]], opponents: list[str]) -> str:
    head = headers(opponents)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cells(r, opponents)) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("paths", nargs="+", type=Path, help="sweep dirs or run dirs")
    parser.add_argument("--evaluate", default="", help="opponents, comma-separated")
    parser.add_argument("--battles", type=int, default=200, help="per opponent and run")
    parser.add_argument("--window", type=int, default=20, help="last iterations averaged")
    parser.add_argument("--eval-arg", action="append", default=[], help="key=value for evaluate")
    parser.add_argument("--out", type=Path, default=None, help="Markdown table path")
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.paths if not p.is_dir()]
    if missing:
        print(f"error: not a directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    runs = find_runs(args.paths, args.window)
    if not runs:
        print("error: no run with a metrics.csv under the given paths", file=sys.stderr)
        return 1
    opponents = [o for o in args.evaluate.split(",") if o]
    for i, run in enumerate(runs):
        if opponents:
            print(f"[{i + 1}/{len(runs)}] evaluating {run.run_dir}", file=sys.stderr)
            evaluate(run, opponents, args.battles, args.eval_arg)
    rows = summarize(runs, opponents)
    table = Table(title=f"ablation: {len(runs)} runs, {len(rows)} settings")
    for name in headers(opponents):
        table.add_column(name)
    for row in rows:
        table.add_row(*cells(row, opponents))
    Console(stderr=True).print(table)
    if args.out:
        args.out.write_text(markdown(rows, opponents))
    print_json(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
