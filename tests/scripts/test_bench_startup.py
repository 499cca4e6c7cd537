"""``scripts/bench/bench_startup.py`` starts an env both ways, alternated, and reports both."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mapleenv.showdown import find_node, find_showdown
from mapleenv.showdown.snapshot import node_args

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench" / "bench_startup.py"


@pytest.mark.integration
@pytest.mark.timeout(180)
def test_bench_startup_reports_both_modes() -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--num-envs", "1", "--rounds", "2"],
        capture_output=True,
        text=True,
        timeout=170,
    )
    if not node_args(find_showdown(), find_node()):  # set-up could not build one here
        assert proc.returncode == 2 and "maple-setup-sim --snapshot" in proc.stderr
        return
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = json.loads(proc.stdout)
    assert line["num_envs"] == 1 and line["rounds"] == 2
    for mode in ("snapshot", "plain"):
        assert 0 < line[f"{mode}_startup_s"] < 120 and line[f"{mode}_cpu_s"] > 0
    assert line["plain_over_snapshot_cpu_s"] > 0
