"""scripts/report/compare_runs.py: several runs' curves on one PNG and their last window's means."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from warm_cli import run_python

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = ["global_step", "wall_s", "win_rate/heuristic", "win_rate/league"]


def _write(path: Path, rows: list[list[object]]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    with (path / "metrics.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        writer.writerows(rows)
    return path


def _compare(*args: str) -> subprocess.CompletedProcess[str]:
    return run_python(
        [sys.executable, str(ROOT / "scripts" / "report" / "compare_runs.py"), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.integration
def test_runs_compared_with_resumed_segments_added_up(tmp_path: Path) -> None:
    # run a: one segment of 10 minutes; run b: resumed once (wall_s restarts), a row with no
    # wall time inside the first segment, 6 + 9 = 15 training minutes in all
    a = _write(tmp_path / "a", [[i * 100, i * 60.0, 0.5, 0.4] for i in range(1, 11)])
    b_rows = [[i * 100, i * 60.0, 0.2, 0.6] for i in range(1, 7)]
    b_rows.insert(3, [350, "", 0.2, 0.6])
    b_rows += [[600 + i * 100, i * 60.0, 0.8, 0.6] for i in range(1, 10)]
    b = _write(tmp_path / "b", b_rows)
    out = tmp_path / "cmp.png"
    proc = _compare(f"a={a}", f"b={b}/metrics.csv", "--out", str(out), "--window", "2")
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["a"]["minutes"] == pytest.approx(10.0)
    assert summary["b"]["minutes"] == pytest.approx(15.0)
    assert summary["b"]["steps"] == 1500
    assert summary["a"]["win_rate/heuristic"] == pytest.approx(0.5)
    assert summary["b"]["win_rate/heuristic"] == pytest.approx(0.8)
    assert summary["b"]["win_rate/league"] == pytest.approx(0.6)


@pytest.mark.integration
def test_a_run_without_metrics_is_one_line(tmp_path: Path) -> None:
    proc = _compare(f"x={tmp_path / 'nothing'}", "--out", str(tmp_path / "o.png"))
    assert proc.returncode != 0
    assert proc.stderr.strip() == f"x: no metrics file at {tmp_path / 'nothing'}"
    assert not (tmp_path / "o.png").exists()
