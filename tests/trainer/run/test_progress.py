"""Progress a person can read: the training line's done/total and ETA, and evaluation's
plain lines when stderr is not a terminal (as under pytest and in CI logs)."""

from __future__ import annotations

import logging
import math

import pytest

from trainer.apps.eval_progress import EvaluationProgress
from trainer.run.progress import RunClock, duration, summary_line

ROW = {"global_step": 76_800, "sps": 551.2, "episode_return": 0.25, "win_rate": 0.5}


def test_durations_read_at_a_persons_precision() -> None:
    assert [duration(s) for s in (0, 44.6, 60, 725, 3600 * 3 + 125)] == [
        "0s",
        "45s",
        "1m00s",
        "12m05s",
        "3h02m",
    ]


def test_the_training_line_shows_done_of_total_and_the_nearer_end() -> None:
    # 76,800 steps in 100 s: the 1,923,200 left take 2,504 s at that pace
    clock = RunClock(total_steps=2_000_000, max_minutes=None)
    status = clock.status(76_800, 100.0)
    assert status == "step 76,800/2,000,000 (4%) | eta 41m44s"
    line = summary_line(ROW | {"episode_length": math.nan}, status)
    assert line == f"{status} | sps 551 | return 0.250 | win 50.0% | len -"
    # a 10-minute budget ends first: what is left of it
    budget = RunClock(total_steps=2_000_000, max_minutes=10)
    assert budget.status(76_800, 100.0).endswith("| eta 8m20s, time budget")
    # a resumed segment's pace is its own: 10,000 steps in its 50 s
    resumed = RunClock(total_steps=100_000, max_minutes=None, first_step=80_000, seconds_before=50)
    assert resumed.time_left(90_000, 100.0) == (50.0, "steps")
    assert RunClock(total_steps=10, max_minutes=None).time_left(0, 0.0) is None  # no pace yet


def test_evaluation_logs_a_line_per_tenth_not_per_battle(caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO, logger="trainer.apps.eval_progress")
    with EvaluationProgress(["random", "heuristic"], 40) as progress:
        for name in ("random", "heuristic"):
            for done in range(1, 41):
                progress(name, done, 40, done // 2)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 20  # ten per opponent, not forty
    assert lines[0].startswith("vs random: 4/40 battles, 2 won (50%), eta ")
    assert lines[9].startswith("vs random: 40/40 battles, 20 won (50%), done in ")
    assert lines[10].startswith("vs heuristic: 4/40 battles")
