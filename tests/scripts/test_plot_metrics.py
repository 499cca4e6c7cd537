"""scripts/report/plot_metrics.py: a learning curve and the last window's means from metrics.csv."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest
from warm_cli import run_python

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.integration
def test_plot_writes_a_png_and_the_smoothed_last_values(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics.csv"
    with metrics.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            [
                "global_step",
                "episode_return",
                "wall_s",
                "win_rate/random",
                "win_rate/heuristic",
                "teacher_agreement",
                "selfplay/hardest_win_rate",
            ]
        )
        for i in range(1, 11):
            # heuristic win rate only every other row (no battle ended against it)
            writer.writerow(
                [
                    i * 100,
                    i / 10,
                    i * 6.0,
                    1.0 if i > 5 else 0.0,
                    0.5 if i % 2 else "",
                    i / 20,
                    0.25,
                ]
            )
    out = tmp_path / "curve.png"
    proc = run_python(
        [
            sys.executable,
            str(ROOT / "scripts" / "report" / "plot_metrics.py"),
            str(metrics),
            str(out),
            "--window",
            "4",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    result = json.loads(proc.stdout)
    assert result["steps"] == 1000
    means = result["last_window_means"]
    assert means["win_rate/random"] == 1.0 and means["win_rate/heuristic"] == 0.5
    assert means["episode_return"] == 0.85 and means["teacher_agreement"] == 0.425
    assert means["selfplay/hardest_win_rate"] == 0.25


def test_training_minutes_add_up_resumed_segments() -> None:
    import numpy as np

    from trainer.run.curves import cumulative_seconds, training_minutes

    # two segments (wall_s restarts on resume): 120 s + 60 s
    wall = np.array([30.0, 120.0, 20.0, float("nan"), 60.0])
    assert training_minutes(wall) == 3.0
    assert np.isnan(training_minutes(np.array([float("nan")])))
    # per row: the second segment starts on top of the first's 120 s; a NaN row carries on
    np.testing.assert_array_equal(cumulative_seconds(wall), [30.0, 120.0, 140.0, 140.0, 180.0])


def test_minutes_axis_continues_past_the_last_step() -> None:
    import numpy as np

    from trainer.run.curves import extended_interp as extended

    steps, minutes = np.array([0.0, 100.0, 300.0]), np.array([0.0, 10.0, 30.0])
    to_steps = extended(minutes, steps)
    # inside: the run's own curve; past either end: the mean rate, so ticks beyond the last
    # step (matplotlib places some there) land on distinct spots instead of one
    np.testing.assert_allclose(to_steps(np.array([5.0, 20.0])), [50.0, 200.0])
    np.testing.assert_allclose(to_steps(np.array([35.0, 40.0, -5.0])), [350.0, 400.0, -50.0])
    np.testing.assert_allclose(extended(steps, minutes)(np.array([400.0])), [40.0])
