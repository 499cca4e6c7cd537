"""scripts/bench/gpu_check.py --device cpu: every part runs and passes (the GPU check does not rot
on machines without a GPU)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.integration
@pytest.mark.timeout(700)
def test_cpu_check_prints_one_passing_line_per_part() -> None:
    cmd = [
        sys.executable,
        str(ROOT / "scripts" / "bench" / "gpu_check.py"),
        "--device",
        "cpu",
        "--quick",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    parts = {line["part"]: line for line in lines}
    assert list(parts) == ["machine", "learner", "checkpoints", "sim"]
    assert all(line["ok"] for name, line in parts.items() if name != "machine")
    update = parts["learner"]["update"]
    assert max(update["fp32_max_rel_diff"].values()) <= update["tolerance"]
    assert update["update_s_cpu"] > 0 and update["update_s_device"] > 0
    assert parts["learner"]["gym"]["device"] == "cpu"
    assert parts["checkpoints"]["device_to_cpu_resumed"]["iterations"] == 1
    (run,) = parts["sim"]["runs"]
    assert run["env_workers"] == run["num_envs"] == 2
    assert run["cuda_in_workers"] == [] and run["train_sps_median"] > 0
    assert len(run["rss_mib_env_workers"]) == 2


@pytest.mark.integration
def test_unknown_part_is_one_usage_error() -> None:
    cmd = [
        sys.executable,
        str(ROOT / "scripts" / "bench" / "gpu_check.py"),
        "--parts",
        "learner,gpu",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "unknown ['gpu']" in proc.stderr
