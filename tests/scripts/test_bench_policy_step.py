"""``scripts/bench/bench_policy_step.py`` times eager and traced steps and says which ran."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from builders import write_tiny_checkpoint
from warm_cli import run_python

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench" / "bench_policy_step.py"


@pytest.mark.integration
def test_bench_policy_step_reports_both_paths(tmp_path: Path) -> None:
    checkpoint = write_tiny_checkpoint(tmp_path / "tiny.pt")
    proc = run_python(
        [sys.executable, str(SCRIPT), str(checkpoint), "--steps", "20", "--rounds", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["traced"] is True
    assert len(result["rounds"]["eager"]) == len(result["rounds"]["traced"]) == 2
    assert result["eager_cpu_ms_per_step"] > 0 and result["traced_cpu_ms_per_step"] > 0
