"""``scripts/bench/profile_env.py`` reports an env's CPU per step, and against the raw simulator."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from warm_cli import run_python

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench" / "profile_env.py"


@pytest.mark.integration
def test_profile_env_compares_the_host_with_the_simulator() -> None:
    proc = run_python(
        [sys.executable, str(SCRIPT), "--steps", "40", "--warmup", "0.5", "--ceiling"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads(proc.stdout.strip().splitlines()[-1])
    assert record["backend"] == "direct" and record["steps"] == 40
    assert record["python_cpu_ms_per_step"] > 0 and record["node_cpu_ms_per_step"] > 0
    assert record["sim_cpu_ms_per_turn"] > 0
    expected = record["node_cpu_ms_per_step"] / record["sim_cpu_ms_per_turn"]
    assert record["node_vs_sim"] == pytest.approx(expected)
