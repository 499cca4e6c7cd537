"""Decision-time search on real battles: legal choices, kept budgets, the same choice for
the same seed and simulation budget, and a dead search host that falls back to the policy."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterator

import numpy as np
import pytest

from mapleenv.actions import action_space_size, legal_actions
from mapleenv.env import PokemonEnv
from mapleenv.search import (
    Decision,
    SearchConfig,
    Searcher,
    SearchHost,
    SearchRefused,
    SearchStats,
    decision_view,
    host_settings,
    host_view,
)

pytestmark = pytest.mark.integration


def _after_a_faint(view: dict) -> bool:
    return view["force_switch"] and any(m["active"] and m["fainted"] for m in view["me"]["pokemon"])


def mid_battle_decisions(
    seed: int, count: int, min_turn: int = 3, switch_ins: bool = False
) -> Iterator[Decision]:
    """``count`` searchable decisions of direct-backend battles played with random legal
    actions, each with a made-up prior over its legal actions: moves and switches mid-turn,
    or with ``switch_ins`` the switch-ins after a faint."""
    rng = random.Random(seed)
    env = PokemonEnv("gen9randombattle", opponent="random", backend="direct", seed=seed)
    try:
        found = 0
        for episode in range(20):
            env.reset(seed=seed + episode)
            while True:
                battle = env.battle
                legal = legal_actions(battle)
                view = decision_view(battle, legal)
                kind = _after_a_faint(view) if switch_ins else not view["force_switch"]
                if battle.turn >= min_turn and len(legal) > 1 and kind:
                    probs = np.zeros(action_space_size(battle.gen), dtype=np.float32)
                    probs[list(legal)] = np.asarray([rng.random() for _ in legal]) + 0.1
                    probs /= probs.sum()
                    # as an env worker sends it (JSON text, int keys become strings)
                    yield Decision(
                        json.loads(json.dumps(view)), probs, max(legal, key=probs.__getitem__)
                    )
                    found += 1
                    if found >= count:
                        return
                _, _, terminated, truncated, _ = env.step(rng.choice(list(legal)))
                if terminated or truncated:
                    break
    finally:
        env.close()


def _searched_twice(
    config: SearchConfig, decisions: list[Decision]
) -> tuple[list[int], list[int], SearchStats]:
    """The picks of two searchers with the same settings, and the first one's stats."""
    first, second = Searcher(config), Searcher(config)
    try:
        return first.choose(decisions), second.choose(decisions), first.stats
    finally:
        first.close()
        second.close()


@pytest.mark.parametrize(("rollout_turns", "replies"), [(0, 0), (3, 4)])
def test_searched_choices_are_legal_and_repeat_under_a_seed_and_sim_budget(
    rollout_turns: int, replies: int
) -> None:
    decisions = list(mid_battle_decisions(seed=3, count=6))
    config = SearchConfig(
        time_ms=None,
        sims=60,
        worlds=2,
        confident=1.0,
        rollout_turns=rollout_turns,
        replies=replies,
    )
    picks, again, stats = _searched_twice(config, decisions)
    for decision, pick in zip(decisions, picks, strict=True):
        assert str(pick) in decision.view["choices"]
    assert picks == again
    assert stats.searched == len(decisions)
    assert stats.sims == stats.searched * 60
    assert stats.fallbacks == 0


def test_the_switch_in_after_a_faint_is_searched_in_worlds_that_ask_for_it() -> None:
    """The world is rebuilt at the end of the turn (the fainted active, a switch request,
    the opponent waiting); each switch-in is scored by the turns after it."""
    decisions = list(mid_battle_decisions(seed=4, count=3, switch_ins=True))
    config = SearchConfig(time_ms=None, sims=24, worlds=2, confident=1.0, rollout_turns=2)
    picks, again, stats = _searched_twice(config, decisions)
    for decision, pick in zip(decisions, picks, strict=True):
        assert decision.view["choices"][str(pick)].startswith("switch ")
    assert picks == again
    assert stats.searched == 3 and stats.refused == 0, stats
    assert stats.sims == 3 * 24 and stats.fallbacks == 0


def test_the_time_budget_is_kept() -> None:
    (decision,) = mid_battle_decisions(seed=5, count=1)
    with SearchHost() as host:
        host.request("warm", format="gen9randombattle")
        view = host_view(decision.view)
        own = list(decision.view["choices"].values())
        for budget in (50, 300):
            settings = host_settings(SearchConfig(time_ms=budget, worlds=3))
            reply = host.request("search", view=view, own=own, seed=1, **settings)
            # checked before every world built and turn simulated: one of those at most
            # over (a search that ignored it would play 1000 passes: seconds to minutes)
            assert reply["ms"] < budget + 400, reply
            assert len(reply["q"]) == len(own)
            assert all(q is None or -1 <= q <= 1 for q in reply["q"])


def test_narrowing_plays_the_pick_and_one_other_choice_on_in_new_worlds() -> None:
    decision = next(d for d in mid_battle_decisions(seed=11, count=8) if len(d.choices) >= 4)
    view = host_view(decision.view)
    own = list(decision.view["choices"].values())[:4]
    config = SearchConfig(time_ms=None, sims=120, worlds=2, rollout_turns=0, replies=3)
    request = {"view": view, "own": own, "seed": 4, "prior": [np.log(0.25)] * 4}
    request |= host_settings(config)
    with SearchHost() as host:
        spread = host.request("search", **request)
        narrowed = host.request("search", **request | {"narrow_after": 1})
        again = host.request("search", **request | {"narrow_after": 1})
    # never narrowed: every choice scored, in the two worlds asked for
    assert spread["worlds"] == 2 and all(q is not None for q in spread["q"]), spread
    # after one pass (2 worlds x 4 choices x 3 replies = 24 turns) the policy's pick and the
    # best other choice meet new worlds (6 turns each) with the other 96 turns
    assert narrowed["sims"] == 120 and narrowed["worlds"] == 2 + 96 // 6, narrowed
    scored = [i for i, q in enumerate(narrowed["q"]) if q is not None]
    assert len(scored) == 2 and scored[0] == 0, narrowed
    assert again["q"] == narrowed["q"]  # the same seed and simulation budget


def test_a_dead_search_host_falls_back_to_the_policy_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    decisions = list(mid_battle_decisions(seed=7, count=3))
    searcher = Searcher(SearchConfig(time_ms=None, sims=20, worlds=1, confident=1.0))
    try:
        searcher.choose(decisions[:1])
        assert searcher.stats.searched == 1
        searcher._hosts[0].kill()
        with caplog.at_level(logging.WARNING, logger="mapleenv.search.decide"):
            picks = searcher.choose(decisions)
            picks_later = searcher.choose(decisions)
    finally:
        searcher.close()
    assert picks == picks_later == [d.action for d in decisions]  # the policy's own picks
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "policy plays alone" in warnings[0].getMessage()
    assert searcher.stats.fallbacks == 1


def test_a_view_the_host_cannot_build_leaves_that_decision_to_the_policy_and_search_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    good, other = mid_battle_decisions(seed=9, count=2)
    view = json.loads(json.dumps(other.view))
    for mon in view["me"]["pokemon"]:
        if mon["active"]:
            mon["fainted"] = True  # fainted, yet no forced switch: no state of a battle
    broken = Decision(view, other.probs, other.action)
    searcher = Searcher(SearchConfig(time_ms=None, sims=20, worlds=1, confident=1.0))
    try:
        with caplog.at_level(logging.WARNING, logger="mapleenv.search.decide"):
            picks = searcher.choose([broken, good])
            searcher.choose([broken])
    finally:
        searcher.close()
    assert picks[0] == broken.action
    assert str(picks[1]) in good.view["choices"]
    assert searcher.stats.refused == 2 and searcher.stats.searched == 1
    assert searcher.stats.fallbacks == 0
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1


def test_a_request_without_a_search_setting_is_refused_naming_it() -> None:
    """Every search setting comes from ``SearchConfig``: the host fills in none of its own."""
    (decision,) = mid_battle_decisions(seed=5, count=1)
    own = list(decision.view["choices"].values())
    request = {"view": host_view(decision.view), "own": own, "seed": 1}
    request |= host_settings(SearchConfig(time_ms=None, sims=10, worlds=1))
    with SearchHost() as host:
        assert host.request("search", **request)["sims"] == 10
        for name in ("rollout_turns", "uniform", "solver_iterations"):
            lacking = {k: v for k, v in request.items() if k != name}
            with pytest.raises(SearchRefused, match=f"search request lacks {name} "):
                host.request("search", **lacking)
        with pytest.raises(SearchRefused, match="dump_worlds request lacks worlds "):
            host.request("dump_worlds", view=request["view"], own=own, seed=1)
