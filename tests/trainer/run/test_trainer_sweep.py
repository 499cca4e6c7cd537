"""A Hydra sweep (`python -m trainer -m ...`) and its report (scripts/report/sweep_report.py)."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest
from warm_cli import run_python

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.integration
@pytest.mark.timeout(600)
def test_sweep_runs_every_setting_and_the_report_summarises_them(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    proc = run_python(
        [
            sys.executable,
            "-m",
            "trainer",
            "-m",
            "env=gym",
            "env.id=CartPole-v1",
            "env.num_envs=2",
            "algo.bptt=4,8",
            "algo.rollout_steps=16",
            "total_steps=64",
            "model.hidden_size=16",
            "model.encoder_sizes=[16]",
            "tensorboard=false",
            f"hydra.sweep.dir={sweep}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(p.name for p in sweep.iterdir() if p.is_dir()) == ["0", "1"]
    # Hydra's own lines and the jobs' logs are on stderr (conf/hydra/*_logging/maple.yaml)
    assert "[HYDRA] Launching 2 jobs locally" in proc.stderr and proc.stdout == ""

    report = run_python(
        [sys.executable, "scripts/report/sweep_report.py", str(sweep)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.returncode == 0, report.stderr
    with (sweep / "sweep_report.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["setting"] for r in rows] == ["algo.bptt=4", "algo.bptt=8"]
    assert all(float(r["median_sps"]) > 0 and int(r["steps"]) == 64 for r in rows)
    assert "algo.bptt=4" in report.stdout
    png = sweep / "sweep_report.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.integration
def test_report_on_an_empty_dir_fails_clearly(tmp_path: Path) -> None:
    report = run_python(
        [sys.executable, "scripts/report/sweep_report.py", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.returncode == 1 and "no run with a metrics.csv" in report.stderr
