"""scripts/report/ablation_report.py: runs grouped by setting with seeds pooled, and a real
evaluation of a run's last checkpoint kept in the run dir."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from builders import write_tiny_checkpoint
from warm_cli import run_python

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = ["global_step", "wall_s", "win_rate/heuristic", "selfplay/league_win_rate"]


def _run_dir(path: Path, overrides: list[str], heuristic: float, league: float) -> Path:
    """A run dir as ``python -m trainer -m`` leaves it: overrides and 10 metrics rows."""
    (path / ".hydra").mkdir(parents=True)
    (path / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
    with (path / "metrics.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        # early rows far from the end value: only the last --window rows may count
        writer.writerows([[i * 100, i * 6.0, 0.0, 0.0] for i in range(1, 6)])
        writer.writerows([[i * 100, i * 6.0, heuristic, league] for i in range(6, 11)])
    return path


def _evaluated(run_dir: Path, wins: int, battles: int) -> None:
    doc = {
        "opponents": {"heuristic": {"battles": battles, "wins": wins, "win_rate": wins / battles}}
    }
    (run_dir / "ablation_eval.json").write_text(json.dumps(doc))


def _report(*args: str) -> subprocess.CompletedProcess[str]:
    return run_python(
        [sys.executable, str(ROOT / "scripts" / "report" / "ablation_report.py"), *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )


@pytest.mark.integration
@pytest.mark.timeout(700)
def test_settings_pool_their_seeds(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    base = ["+experiment=league_ppo", "max_minutes=20"]
    runs = {
        ("rich", "1"): (0.6, 0.5, 30),
        ("rich", "2"): (0.8, 0.7, 50),
        ("rich2", "1"): (0.9, 0.4, 70),
        ("rich2", "2"): (0.7, 0.6, 80),
    }
    for i, ((encoder, seed), (heuristic, league, wins)) in enumerate(runs.items()):
        overrides = [*base, f"seed={seed}", f"env.encoder={encoder}"]
        run_dir = _run_dir(sweep / str(i), overrides, heuristic, league)
        _evaluated(run_dir, wins, 100)
    out = tmp_path / "ablation.md"
    proc = _report(
        str(sweep),
        "--evaluate",
        "heuristic",
        "--battles",
        "100",
        "--window",
        "5",
        "--out",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    rows = {r["setting"]: r for r in json.loads(proc.stdout.strip().splitlines()[-1])}
    assert set(rows) == {"env.encoder=rich", "env.encoder=rich2"}
    rich, rich2 = rows["env.encoder=rich"], rows["env.encoder=rich2"]
    assert rich["seeds"] == ["1", "2"]
    assert rich["training"]["win_rate/heuristic"] == pytest.approx(0.7)
    assert rich2["training"]["selfplay/league_win_rate"] == pytest.approx(0.5)
    assert rich["evaluation"]["heuristic"]["wins"] == 80
    assert rich["evaluation"]["heuristic"]["battles"] == 200
    assert rich2["evaluation"]["heuristic"]["win_rate"] == pytest.approx(0.75)
    assert rich2["evaluation"]["heuristic"]["per_seed"] == [0.7, 0.8]
    low, high = rich2["evaluation"]["heuristic"]["ci"]
    assert low < 0.75 < high
    table = out.read_text()
    assert "| env.encoder=rich2 | 1,2 |" in table
    assert "75.0%" in table and "(70%/80%)" in table


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_a_run_is_evaluated_once_and_kept(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path / "sweep" / "0", ["seed=3"], 0.5, 0.5)
    write_tiny_checkpoint(run_dir / "checkpoints" / "last.pt")
    args = (str(tmp_path / "sweep"), "--evaluate", "random", "--battles", "2")
    proc = _report(*args, "--eval-arg", "num_envs=1")
    assert proc.returncode == 0, proc.stderr
    kept = json.loads((run_dir / "ablation_eval.json").read_text())
    assert kept["opponents"]["random"]["battles"] == 2
    row = json.loads(proc.stdout.strip().splitlines()[-1])[0]
    assert row["setting"] == "base" and row["seeds"] == ["3"]
    assert row["evaluation"]["random"]["battles"] == 2
    # a second report reuses the kept results: no checkpoint needed any more
    (run_dir / "checkpoints" / "last.pt").unlink()
    again = _report(*args)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout.strip().splitlines()[-1]) == [row]


@pytest.mark.integration
def test_bad_paths_are_one_line(tmp_path: Path) -> None:
    missing = _report(str(tmp_path / "nothing"))
    assert missing.returncode == 2
    assert "not a directory" in missing.stderr
    empty = _report(str(tmp_path))
    assert empty.returncode == 1
    assert "no run with a metrics.csv" in empty.stderr
    run_dir = _run_dir(tmp_path / "sweep" / "0", ["seed=1"], 0.5, 0.5)
    no_checkpoint = _report(str(run_dir), "--evaluate", "random", "--battles", "2")
    assert no_checkpoint.returncode == 1
    assert "no checkpoints/last.pt" in no_checkpoint.stderr
