"""How search's scores and the policy's prior make one choice (no process)."""

from __future__ import annotations

import numpy as np
import pytest

from mapleenv.search import SearchConfig, Searcher
from mapleenv.search.decide import candidates, combine, needs_search


def test_candidates_put_the_pick_first_then_the_likeliest_above_min_prior() -> None:
    probs = np.zeros(26)
    probs[[6, 7, 8, 2]] = [0.5, 0.3, 0.005, 0.195]
    config = SearchConfig(sims=10, time_ms=None, max_actions=3, min_prior=0.01)
    assert candidates(probs, [2, 6, 7, 8], pick=7, config=config) == [7, 6, 2]
    # the pick is searched even when it is unlikely
    assert candidates(probs, [2, 6, 7, 8], pick=8, config=config) == [8, 6, 7]


def test_combine_reweights_the_prior_by_the_scores() -> None:
    probs = np.zeros(26)
    probs[[6, 7]] = [0.7, 0.3]
    # equal scores: the prior decides
    assert combine(probs, [6, 7], [0.1, 0.1], temperature=0.03) == 6
    # a clearly better score outweighs the prior...
    assert combine(probs, [6, 7], [0.0, 0.1], temperature=0.03) == 7
    # ...unless the temperature says the prior counts more
    assert combine(probs, [6, 7], [0.0, 0.01], temperature=0.1) == 6
    # unscored actions (refused in every world) are never chosen
    assert combine(probs, [6, 7], [None, -0.5], temperature=0.03) == 7
    assert combine(probs, [6, 7], [None, None], temperature=0.03) is None


def test_confident_priors_mid_turn_switches_and_single_actions_are_not_searched() -> None:
    config = SearchConfig(sims=10, time_ms=None, confident=0.9)
    probs = np.zeros(26)
    probs[[6, 7]] = [0.6, 0.4]
    view = {"choices": {"6": "move 1", "7": "move 2"}, "force_switch": False}
    assert needs_search(view, probs, config)
    # a forced switch after U-turn (the active is alive): the rest of the turn is unknown
    alive = {"pokemon": [{"active": True, "fainted": False}, {"active": False}]}
    assert not needs_search({**view, "force_switch": True, "me": alive}, probs, config)
    # the switch-in after a faint, at the end of a turn: searched
    fainted = {"pokemon": [{"active": True, "fainted": True}, {"active": False}]}
    assert needs_search({**view, "force_switch": True, "me": fainted}, probs, config)
    assert not needs_search({**view, "choices": {"6": "move 1"}}, probs, config)
    probs[[6, 7]] = [0.95, 0.05]
    assert not needs_search(view, probs, config)


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"time_ms": None, "sims": None}, "budget"),
        ({"worlds": 0}, "search.worlds"),
        ({"temperature": 0}, "search.temperature"),
        ({"uniform": 1.5}, "search.uniform"),
        ({"seed": -1}, "search.seed"),
        ({"sims": 0}, "search.sims"),
        ({"rollout_turns": -1}, "search.rollout_turns"),
        ({"replies": 27}, "search.replies"),
        ({"narrow_after": -1}, "search.narrow_after"),
        ({"opponent": "oracle"}, "search.opponent is not one of greedy, policy"),
        ({"prior_share": -0.1}, "search.prior_share"),
        ({"solver_iterations": 0}, "search.solver_iterations"),
    ],
)
def test_bad_settings_are_one_line(settings: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field) as info:
        SearchConfig(**settings)
    assert "\n" not in str(info.value)


def test_the_policy_opponent_model_needs_a_network() -> None:
    with pytest.raises(ValueError, match="search.opponent=policy needs the agent's network"):
        Searcher(SearchConfig(opponent="policy"))
    Searcher(SearchConfig(opponent="greedy")).close()  # the greedy reading needs none
