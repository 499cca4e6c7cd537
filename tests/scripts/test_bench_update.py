"""scripts/bench/bench_update.py: the real PPO update timed per torch-thread / wait-policy mode."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.integration
@pytest.mark.timeout(400)
def test_every_mode_timed_beside_a_busy_process() -> None:
    """Both modes timed, each in its own process, beside one busy process (a quiet line,
    ``--load 0``, runs the same code without it); the first mode is the ratios' base."""
    cmd = [
        sys.executable,
        str(ROOT / "scripts" / "bench" / "bench_update.py"),
        "--modes",
        "1,1:passive:spin=100",
    ]
    cmd += ["--load", "1", "--rounds", "1", "--repeats", "1", "--steps", "64", "--bptt", "8"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [line["load_procs"] for line in lines] == [1]
    for line in lines:
        assert set(line["update_s"]) == {"1", "1:passive:spin=100"}
        assert all(s > 0 for s in line["update_s"].values())
        assert line["vs_first"]["1"] == 1.0 and line["updates_per_mode"] == 1
