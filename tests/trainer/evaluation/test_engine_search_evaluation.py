"""Evaluation with search.engine=poke-engine: the engine's work recorded per opponent, and
a ``policy_search:`` opponent searching on the engine by its name's options."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("poke_engine", reason="poke-engine is not installed (make setup)")

from mapleenv import EnvSpec  # noqa: E402
from mapleenv.policies import load_checkpoint, policy_from_snapshot, snapshot_encoder  # noqa: E402
from mapleenv.search import SearchConfig  # noqa: E402
from trainer.evaluation import evaluate_policy  # noqa: E402

pytestmark = pytest.mark.integration

CHECKPOINT = Path(__file__).resolve().parents[3] / "models" / "attention_ppo_gen9random.pt"


def test_an_engine_searched_evaluation_records_the_engines_work() -> None:
    checkpoint = load_checkpoint(CHECKPOINT)
    spec = EnvSpec(encoder=snapshot_encoder(checkpoint), backend="direct", max_turns=8)
    (result,) = evaluate_policy(
        policy_from_snapshot(checkpoint),
        spec.checked(),
        ["max_power"],
        2,
        num_envs=2,
        search=SearchConfig(
            engine="poke-engine", time_ms=None, engine_iterations=2000, confident=1.0
        ),  # fmt: skip
    )
    assert result.battles == 2
    stats = result.to_dict()["search"]
    assert 0 < stats["searched"] <= stats["decisions"]
    assert stats["mean_iterations"] == 2 * 2000  # two worlds a decision, 2000 iterations each
    assert stats["mean_engine_ms"] > 0 and stats["mean_search_ms"] >= stats["mean_engine_ms"]
    assert stats["engine_failures"] == 0 and stats["fallbacks"] == 0 and stats["mean_sims"] == 0


def test_a_policy_search_opponent_searches_on_the_engine_its_name_asks_for() -> None:
    checkpoint = load_checkpoint(CHECKPOINT)
    spec = EnvSpec(encoder=snapshot_encoder(checkpoint), backend="direct", max_turns=6)
    (result,) = evaluate_policy(
        policy_from_snapshot(checkpoint),
        spec.checked(),
        [f"policy_search:{CHECKPOINT}?engine=poke-engine&time_ms=30"],
        1,
        num_envs=1,
    )
    assert result.battles == 1 and "search" not in result.to_dict()
    assert 0 < result.mean_turns <= 6
