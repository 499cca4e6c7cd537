"""The shipped doubles agent (``models/attention_ppo_gen9randomdoubles.pt``, models/README.md):
a doubles attention policy file the safe loader reads, that evaluates in its own format from the
CLI and beats random play."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import evaluate_json

from mapleenv.policies import read_snapshot, snapshot_encoder

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
AGENT = ROOT / "models" / "attention_ppo_gen9randomdoubles.pt"


@pytest.mark.timeout(300)
def test_the_shipped_doubles_agent_beats_random_play(tmp_path: Path) -> None:
    snapshot = read_snapshot(AGENT)
    assert snapshot["policy"]["n_actions"] == 47 * 47  # two slots' joint actions
    assert snapshot_encoder(snapshot) == "doubles3"
    assert snapshot["policy"]["model"]["kind"] == "attention"
    document = evaluate_json(
        tmp_path, f"checkpoint={AGENT}", "battles=12", "num_envs=2", "opponents=[random]"
    )
    assert document["battle_format"] == "gen9randomdoublesbattle"
    result = document["opponents"]["random"]
    # 99.5% over 400 battles: 9 or fewer of 12 would have a probability under 1e-3
    assert result["battles"] == 12 and result["wins"] >= 10, result
