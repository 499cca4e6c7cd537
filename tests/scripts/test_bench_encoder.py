"""``scripts/bench/bench_encoder.py --encoder NAME`` times the encoder it is given."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from warm_cli import run_python

from mapleenv.encoders import make_encoder

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench" / "bench_encoder.py"


@pytest.mark.integration
@pytest.mark.timeout(400)
def test_bench_encoder_times_the_named_encoder() -> None:
    proc = run_python(
        [sys.executable, str(SCRIPT), "--encoder", "singles_basic", "--battles", "1"]
        + ["--rounds", "1", "--sim-seconds", "0", "--concurrent", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["encoder"] == "singles_basic"
    assert (
        result["size"]
        == make_encoder("singles_basic").size
        != make_encoder("singles_entities").size
    )
    assert result["states"] > 0 and result["encode_wall_us"]["median"] > 0
    assert result["calc_calls_per_state"] == 0  # singles_basic has no calculator


@pytest.mark.integration  # runs the script
def test_bench_encoder_refuses_an_unknown_encoder() -> None:
    proc = run_python(
        [sys.executable, str(SCRIPT), "--encoder", "nope"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "invalid choice: 'nope'" in proc.stderr and "rich2" in proc.stderr
