"""search.engine=poke-engine on real battles: legal choices through a whole battle, the
iteration budget's same choices and visits under the same seed, the policy's prior steering
the root's visits (search.engine_puct), the time budget kept, and
a world the engine cannot take left to the policy with one warning while search goes on."""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import time

import numpy as np
import pytest

pe = pytest.importorskip("poke_engine", reason="poke-engine is not installed (make setup)")

from test_search import mid_battle_decisions  # noqa: E402 (the search tests' real decisions)

from mapleenv.actions import action_space_size, legal_actions  # noqa: E402
from mapleenv.env import PokemonEnv  # noqa: E402
from mapleenv.search import (  # noqa: E402
    Decision,
    SearchConfig,
    Searcher,
    decision_view,
)

pytestmark = pytest.mark.integration


def _engine(**fields) -> SearchConfig:
    return SearchConfig(**{"engine": "poke-engine", "confident": 1.0, "worlds": 2, **fields})


def test_a_whole_battle_decided_by_the_engine_search_plays_legal_choices_to_its_end() -> None:
    env = PokemonEnv("gen9randombattle", opponent="random", backend="direct", seed=5)
    searcher = Searcher(_engine(time_ms=20))
    try:
        env.reset(seed=5)
        for _ in range(400):
            battle = env.battle
            legal = legal_actions(battle)
            probs = np.zeros(action_space_size(battle.gen), dtype=np.float32)
            probs[list(legal)] = 1.0 / len(legal)
            view = json.loads(json.dumps(decision_view(battle, legal)))
            (pick,) = searcher.choose([Decision(view, probs, min(legal))])
            assert pick in legal
            _, _, terminated, truncated, _ = env.step(pick)
            if terminated or truncated:
                break
        assert terminated or truncated
    finally:
        searcher.close()
        env.close()
    stats = searcher.stats
    assert stats.searched > 5 and stats.engine_failures == 0 and stats.fallbacks == 0
    assert stats.iterations > 1000 * stats.searched  # every searched world ran the engine


def _searched(config: SearchConfig, decisions: list[Decision]) -> tuple[list[int], list, int]:
    """Each decision searched alone: the picks, the engine's root shares, the iterations."""
    searcher = Searcher(config)
    try:
        picks, shares = [], []
        for decision in decisions:
            picks += searcher.choose([decision])
            shares.append(dict(searcher._engine.last.shares))
    finally:
        searcher.close()
    return picks, shares, searcher.stats.iterations


def test_the_iteration_budget_gives_the_same_choice_under_the_same_seed() -> None:
    decisions = list(mid_battle_decisions(seed=3, count=4))
    config = _engine(time_ms=None, engine_iterations=3000, seed=11)
    picks, shares, iterations = _searched(config, decisions)
    for decision, pick in zip(decisions, picks, strict=True):
        assert str(pick) in decision.view["choices"]
    # the engine runs 1000 iterations at a time: 3000 a world, 2 worlds a decision
    assert iterations == 4 * 2 * 3000
    # a new searcher (new host, new engine calls), the same seed: the same worlds, the same
    # MCTS random numbers, so the same visits and the same choices
    again, shares_again, _ = _searched(config, decisions)
    assert again == picks and shares_again == shares
    # another seed searches other worlds with other random numbers: the visits differ
    _, other, _ = _searched(_engine(time_ms=None, engine_iterations=3000, seed=12), decisions)
    assert other != shares


def test_the_policy_prior_steers_the_root_visits_toward_the_actions_it_favours() -> None:
    decisions = list(mid_battle_decisions(seed=3, count=3))
    alone = _engine(time_ms=None, engine_iterations=3000, seed=11)
    _, shares, _ = _searched(alone, decisions)
    # most of the prior on the action the engine alone visited least (below 1: searched)
    favoured = [min(s, key=s.get) for s in shares]
    steered = []
    for decision, action in zip(decisions, favoured, strict=True):
        probs = np.zeros_like(decision.probs)
        probs[list(decision.choices)] = 0.2 / (len(decision.choices) - 1)
        probs[action] = 0.8
        steered.append(Decision(decision.view, probs, decision.action))
    picks, steered_shares, _ = _searched(dataclasses.replace(alone, engine_puct=5.0), steered)
    for decision, pick, action, before, after in zip(
        steered, picks, favoured, shares, steered_shares, strict=True
    ):
        assert str(pick) in decision.view["choices"]
        assert after[action] > 2 * before[action], (action, before, after)
    # a weight of 0 is the engine alone, visit for visit
    assert _searched(dataclasses.replace(alone, engine_puct=0.0), steered)[1] == shares


def test_the_time_budget_is_kept() -> None:
    decisions = list(mid_battle_decisions(seed=5, count=3))
    for budget in (50, 200):
        searcher = Searcher(_engine(time_ms=budget))
        try:
            searcher.choose(decisions[:1])  # the host's start and warm-up are not the budget's
            searcher.reset_stats()
            for decision in decisions:
                start = time.process_time()
                searcher.choose([decision])
                # this process's CPU (the engine's MCTS runs here; the worlds are the search
                # host's): a loaded box stretches the wall clock, never this; the engine
                # checks its clock every 1000 iterations (a few ms a world)
                spent = 1000 * (time.process_time() - start)
                assert spent < budget + 60, (budget, spent)
        finally:
            searcher.close()
        stats = searcher.stats.as_dict()
        # wall clock, worlds included: only a search past its budget many times over fails
        assert stats["searched"] == 3 and stats["mean_search_ms"] < 3 * budget + 100, stats
        assert stats["mean_iterations"] >= 2000, stats


def _unconvertible(decision: Decision) -> Decision:
    """The decision with its active's stats past what the engine holds (16 bits): the
    simulator builds the world, the engine cannot take it."""
    view = copy.deepcopy(decision.view)
    for mon in view["me"]["pokemon"]:
        if mon["active"]:
            mon["stats"] = {k: 70000 for k in mon["stats"]}
    return Decision(view, decision.probs, decision.action)


def test_a_world_the_engine_cannot_take_leaves_the_decision_to_the_policy_and_search_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    good, other = mid_battle_decisions(seed=9, count=2)
    broken = _unconvertible(other)
    searcher = Searcher(_engine(time_ms=30))
    try:
        with caplog.at_level(logging.WARNING, logger="mapleenv.search.decide"):
            picks = searcher.choose([broken, good])
            again = searcher.choose([broken, good])
    finally:
        searcher.close()
    assert picks[0] == again[0] == broken.action  # the policy's own pick
    assert str(picks[1]) in good.view["choices"] and str(again[1]) in good.view["choices"]
    stats = searcher.stats
    assert stats.engine_failures == 2 and stats.searched == 2 and stats.fallbacks == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "poke-engine" in warnings[0], warnings


@pytest.mark.parametrize("checkpoint", [None, "models/attention_ppo_gen9random.pt"])
def test_the_public_api_gives_engine_states_and_a_legal_order_for_a_poke_env_battle(
    checkpoint: str | None,
) -> None:
    from mapleenv.opponents.engine_search import EngineSearch

    env = PokemonEnv("gen9randombattle", opponent="random", backend="direct", seed=2)
    search = EngineSearch(checkpoint, time_ms=30, confident=1.0)
    searched = 0
    try:
        env.reset(seed=2)
        for _ in range(6):
            battle = env.battle
            legal = legal_actions(battle)
            choice = search.choose(battle)
            messages = {order.message: a for a, order in legal.items()}
            assert choice.order.message in messages  # one of the battle's legal orders
            if choice.searched:
                searched += 1
                assert len(choice.states) == 2
                assert all(isinstance(s, pe.State) for s in choice.states)
                assert set(choice.shares) <= set(decision_view(battle, legal)["choices"].values())
                assert (choice.prior is None) == (checkpoint is None)
            assert len(search.states(battle)) == 2
            _, _, terminated, truncated, _ = env.step(messages[choice.order.message])
            if terminated or truncated:
                break
    finally:
        search.close()
        env.close()
    assert searched >= 3
