"""scripts/stress/soak.py: a short real run sampled for memory, reported per process as JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# on the default (direct) backend only: the sampling finds a run's processes by role
# (trainer.run.probe.processes_by_role), as the chaos run does, which the CI's server pass
# repeats on Showdown servers (tests/scripts/test_chaos.py)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_soak_samples_every_process_and_stops_the_run_with_its_checkpoint(tmp_path: Path):
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "stress" / "soak.py"),
            "--minutes", "0.2",
            "--warmup", "0.1",
            "--interval", "1",
            "--window", "0.05",
            "--",
            "+experiment=smoke",
            "env.backend=direct",
            "total_steps=100000000",
            f"hydra.run.dir={tmp_path}",
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=280,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["exit_code"] == 130  # SIGTERM: the trainer saved and stopped
    assert (tmp_path / "checkpoints" / "last.pt").is_file()
    assert set(result["roles"]) == {"trainer", "env_worker", "sim_host"}
    for process in result["processes"]:
        if not process.get("new"):
            assert process["rss_mb_warm"] > 0 and process["samples"] >= 5
            assert process["growth_pct"] == pytest.approx(
                100 * (process["rss_mb_end"] - process["rss_mb_warm"]) / process["rss_mb_warm"],
                rel=0.01,
                abs=0.5,  # the MB values are rounded
            )
            after = [rss for t, rss in process["series"] if t >= 6.0]  # after the warm-up
            assert min(after) <= process["rss_mb_warm"] <= max(after)
            assert min(after) <= process["rss_mb_end"] <= process["rss_mb_peak"] == max(after)
            assert isinstance(process["slope_mb_per_min"], float)
