"""The engine search as a training teacher: its targets are the search's root visit shares
(masked to the env's actions, normalised; re-weighted by a prior when one is given), its
settings are checked once, and a missing engine is one line at start."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from mapleenv.search import EngineMissing, SearchTeacherConfig, search_target
from mapleenv.search.teacher import choice_target


def test_a_fixed_search_result_becomes_its_root_shares_over_the_env_actions() -> None:
    mask = np.zeros(26, dtype=np.int8)
    mask[[0, 1, 7, 9]] = 1
    shares = {"move 1": 0.6, "switch 3": 0.3, "move 2": 0.1}  # as SearchedChoice holds them
    choices = {0: "move 1", 1: "move 2", 7: "switch 3", 9: "switch 5"}
    target = choice_target(shares, choices, mask)
    expected = np.zeros(26, dtype=np.float32)
    expected[[0, 7, 1]] = [0.6, 0.3, 0.1]
    np.testing.assert_allclose(target, expected, rtol=1e-6)
    assert target.dtype == np.float32


def test_actions_the_env_masks_get_no_target_and_the_rest_is_renormalised() -> None:
    mask = np.array([1, 0, 1, 1], dtype=np.int8)  # action 1 masked (e.g. a futile move)
    target = search_target({0: 0.5, 1: 0.25, 2: 0.25, 5: 0.9}, mask)  # 5: not an action here
    np.testing.assert_allclose(target, [2 / 3, 0.0, 1 / 3, 0.0], rtol=1e-6)
    assert not search_target({1: 1.0}, mask).any()  # nothing allowed visited: no target


def test_a_prior_reweights_the_shares() -> None:
    mask = np.ones(3, dtype=np.int8)
    prior = np.array([0.5, 0.25, 0.25])
    target = search_target({0: 0.2, 1: 0.8}, mask, prior, prior_weight=1.0)
    np.testing.assert_allclose(target, [0.1 / 0.3, 0.2 / 0.3, 0.0], rtol=1e-6)
    alone = search_target({0: 0.2, 1: 0.8}, mask, prior, prior_weight=0.0)
    np.testing.assert_allclose(alone, [0.2, 0.8, 0.0], rtol=1e-6)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"share": 1.5}, "search_teacher.share is out of range: 1.5"),
        ({"share": 0.1, "worlds": 0}, "search_teacher.worlds is out of range: 0"),
        ({"time_ms": None}, "search_teacher needs a budget: time_ms or iterations"),
        ({"shares": 0.1}, "unknown search_teacher setting(s) shares"),
    ],
)
def test_bad_settings_are_one_line(settings: dict, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        SearchTeacherConfig.from_value(settings)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_off_by_default_and_from_a_mapping() -> None:
    assert not SearchTeacherConfig.from_value(None).enabled
    made = SearchTeacherConfig.from_value({"share": 0.1, "iterations": 2000})
    assert made.enabled and made.iterations == 2000 and made.time_ms == 50.0


@pytest.mark.integration
def test_a_missing_engine_is_one_line_when_the_spec_is_checked(monkeypatch) -> None:
    from mapleenv.spec import EnvSpec

    monkeypatch.setitem(sys.modules, "poke_engine", None)  # import poke_engine raises
    spec = EnvSpec("gen9randombattle", "random", search_teacher={"share": 0.1})
    with pytest.raises(EngineMissing) as caught:
        spec.checked()
    message = str(caught.value)
    assert message.startswith("search_teacher.share > 0 needs the engine: poke-engine is not")
    assert "make setup" in message and "\n" not in message
    EnvSpec("gen9randombattle", "random").checked()  # off: no engine asked for


@pytest.mark.integration
def test_the_target_of_a_real_searched_decision_is_the_searchs_root_shares() -> None:
    pytest.importorskip("poke_engine", reason="poke-engine is not installed (make setup)")
    from mapleenv.env import PokemonEnv

    config = SearchTeacherConfig(share=1.0, time_ms=None, iterations=1000, worlds=1)
    env = PokemonEnv("gen9randombattle", "random", backend="direct", seed=7, search_teacher=config)
    try:
        obs, _ = env.reset(seed=7)
        checked = 0
        for _ in range(12):
            target, mask = obs["teacher_probs"], obs["action_mask"]
            last = env.search_teacher._search.last
            if target.any():
                assert last is not None and last.searched
                assert target.sum() == pytest.approx(1.0, abs=1e-5)
                assert not target[mask == 0].any()
                by_action = {a: last.shares[c] for a, c in _choices(env).items()}
                total = sum(s for a, s in by_action.items() if mask[a])
                for action, share in by_action.items():
                    if mask[action]:
                        assert target[action] == pytest.approx(share / total, abs=1e-6)
                checked += 1
            legal = np.flatnonzero(mask)
            obs, _, terminated, truncated, _ = env.step(int(legal[0]))
            if terminated or truncated:
                obs, _ = env.reset()
        assert checked >= 5
        stats = env.search_teacher_stats()
        assert stats["decisions"] >= stats["searched"] >= checked  # the last obs is searched too
    finally:
        env.close()


def _choices(env) -> dict[int, str]:
    """The current decision's action -> simulator choice string, as the search saw them."""
    from mapleenv.encoders import playable_actions
    from mapleenv.search import decision_view

    view = decision_view(env.battle, playable_actions(env.battle, False))
    return {int(a): c for a, c in view["choices"].items()}
