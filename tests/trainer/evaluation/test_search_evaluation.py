"""Evaluation with decision-time search: the shipped agent's picks re-decided by search,
what search did recorded per opponent, and ``policy_search:`` opponents that search too."""

from __future__ import annotations

from pathlib import Path

import pytest

from mapleenv import EnvSpec
from mapleenv.policies import load_checkpoint, policy_from_snapshot, snapshot_encoder
from mapleenv.search import SearchConfig
from trainer.evaluation import evaluate_policy

pytestmark = pytest.mark.integration

CHECKPOINT = Path(__file__).resolve().parents[3] / "models" / "attention_ppo_gen9random.pt"


def test_searched_evaluation_records_what_search_did() -> None:
    checkpoint = load_checkpoint(CHECKPOINT)
    policy = policy_from_snapshot(checkpoint)
    spec = EnvSpec(encoder=snapshot_encoder(checkpoint), backend="direct", max_turns=8)
    (result,) = evaluate_policy(
        policy,
        spec.checked(),
        ["max_power"],
        2,
        num_envs=2,
        # the agent's network models the opponent too (the greedy reading: test_search.py)
        search=SearchConfig(time_ms=None, sims=20, worlds=1, confident=1.0, opponent="policy"),
    )
    assert result.battles == 2
    # per env, its counted battles' results in order: one battle each
    assert result.to_dict()["outcomes"] == result.outcomes
    assert [len(env) for env in result.outcomes] == [1, 1]
    assert sum(env.count("1") for env in result.outcomes) == result.wins
    stats = result.to_dict()["search"]
    # every decision with two or more choices was searched (confident=1.0 skips none)
    assert 0 < stats["searched"] <= stats["decisions"]
    assert stats["mean_sims"] == 20
    assert stats["fallbacks"] == 0 and stats["mean_model_ms"] > 0
    assert 0 <= stats["overridden"] <= stats["searched"]


def test_a_policy_search_opponent_plays_whole_battles() -> None:
    checkpoint = load_checkpoint(CHECKPOINT)
    policy = policy_from_snapshot(checkpoint)
    # a few searched decisions are enough (a truncated battle counts)
    spec = EnvSpec(encoder=snapshot_encoder(checkpoint), backend="direct", max_turns=6)
    (result,) = evaluate_policy(
        policy, spec.checked(), [f"policy_search:{CHECKPOINT}"], 1, num_envs=1
    )
    assert result.battles == 1 and "search" not in result.to_dict()
    assert 0 < result.mean_turns <= 6
