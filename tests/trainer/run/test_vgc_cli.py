"""VGC through the CLIs (issue 32): the doubles smoke run trains on ``gen9vgc2025regi`` with
the shipped folder of team files on the direct backend, and its checkpoint evaluates on the
server backend with the same teams (the env itself runs VGC on both backends in
tests/mapleenv/test_vgc_teams.py)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from builders import evaluate_json, run_module

from trainer.run.checkpoint import load_checkpoint

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
TEAMS = ROOT / "teams" / "gen9vgc2025regi"


@pytest.mark.timeout(300)
def test_vgc_trains_on_direct_and_evaluates_on_server(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc = run_module(
        "trainer",
        "+experiment=doubles_smoke",
        "env.battle_format=gen9vgc2025regi",
        f"env.team={TEAMS}",
        "env.backend=direct",
        f"hydra.run.dir={run_dir}",
        "tensorboard=false",
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    with (run_dir / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [int(r["global_step"]) for r in rows] == [32, 64, 96]
    assert sum(int(r["episodes"]) for r in rows) > 0  # VGC battles finished, not only started
    ckpt = load_checkpoint(run_dir)
    assert ckpt["config"]["env"]["battle_format"] == "gen9vgc2025regi"

    document = evaluate_json(
        tmp_path,
        f"checkpoint={run_dir}",
        "battles=2",
        "num_envs=1",
        "backend=server",
        "opponents=[random]",
    )
    assert document["battle_format"] == "gen9vgc2025regi"
    assert Path(document["team"]) == TEAMS  # the run's teams, read from its checkpoint
    result = document["opponents"]["random"]
    assert result["battles"] == 2 and result["quality"]["turns"] > 0
