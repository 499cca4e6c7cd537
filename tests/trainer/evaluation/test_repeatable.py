"""An evaluation under one seed repeats itself battle for battle, against poke-env's baseline
players too (they draw from Python's ``random``, seeded in each env worker by its env's seed):
two runs of ``python -m trainer.evaluate`` write the same results."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from warm_cli import run_python

ROOT = Path(__file__).resolve().parents[3]
CHECKPOINT = ROOT / "models" / "attention_ppo_gen9random.pt"


def _results(run_dir: Path) -> dict:
    proc = run_python(
        [
            sys.executable,
            "-m",
            "trainer.evaluate",
            f"checkpoint={CHECKPOINT}",
            "opponents=[max_power]",
            "battles=4",
            "num_envs=1",
            "seed=3",
            f"hydra.run.dir={run_dir}",
        ],
        cwd=ROOT,
        timeout=400,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return json.loads((run_dir / "evaluation.json").read_text())["opponents"]


@pytest.mark.integration
@pytest.mark.timeout(600)
def test_one_seed_plays_the_same_battles_twice(tmp_path: Path) -> None:
    first, again = _results(tmp_path / "a"), _results(tmp_path / "b")
    ours, theirs = first["max_power"], again["max_power"]
    for key in ("outcomes", "quality", "mean_turns"):
        assert ours[key] == theirs[key], key
