"""trainer.run.probe: a run read from outside (what chaos.py and soak.py check)."""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pytest

from trainer.run.probe import (
    SIM_DIR_PREFIX,
    check_checkpoint,
    last_iteration,
    left_running,
    metrics_rows,
    sim_dirs_of,
)


def test_a_run_dir_without_metrics_has_no_rows_and_iteration_zero(tmp_path: Path) -> None:
    assert metrics_rows(tmp_path) == []
    assert last_iteration(tmp_path) == 0
    (tmp_path / "metrics.csv").write_text("iteration,sps\n1,10\n2,11\n")
    assert [r["sps"] for r in metrics_rows(tmp_path)] == ["10", "11"]
    assert last_iteration(tmp_path) == 2


def test_a_missing_checkpoint_is_reported_not_raised(tmp_path: Path) -> None:
    result = check_checkpoint(tmp_path)
    assert result["ok"] is False and result["error"]


def test_sim_dirs_are_found_by_their_owner(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    mine, other = tmp_path / f"{SIM_DIR_PREFIX}a", tmp_path / f"{SIM_DIR_PREFIX}b"
    for directory, owner in ((mine, os.getpid()), (other, 1)):
        directory.mkdir()
        (directory / "owner").write_text(f"{owner} x\n")
    (tmp_path / f"{SIM_DIR_PREFIX}broken").mkdir()  # no owner file: skipped
    assert sim_dirs_of({os.getpid()}) == {mine}


@pytest.mark.integration
def test_left_running_names_a_process_by_its_mark_and_not_a_finished_one(tmp_path) -> None:
    mark = str(tmp_path / "run-mark")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", mark])
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    seen = [psutil.Process(done.pid)]  # seen while it ran, finished by the time we look
    done.wait()
    try:
        left = left_running(seen, [mark], wait_s=0.1)
        assert [row["pid"] for row in left] == [child.pid]
    finally:
        child.kill()
        child.wait()
    assert left_running([], [mark], wait_s=0.1) == []
