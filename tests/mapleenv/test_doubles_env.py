"""Double battles end to end on the real simulator: the joint action mask is exact (every
masked-in pair is accepted, on both backends), the env passes Gymnasium's checker, and the
doubles encoder and settings checks hold."""

from __future__ import annotations

import logging
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import mapleenv
from mapleenv import PokemonEnv
from mapleenv.actions import action_space_size, legal_actions
from mapleenv.actions.doubles import slot_space_size, split
from mapleenv.encoders.doubles.basic import BLOCKS
from mapleenv.showdown.formats import check_format, is_doubles_format

pytestmark = pytest.mark.integration

FORMAT = "gen9randomdoublesbattle"
SLOT = slot_space_size(9)


def _doubles_env(**settings) -> PokemonEnv:
    settings.setdefault("opponent", "random")
    return PokemonEnv(FORMAT, encoder="doubles", **settings)


def _pair_is_consistent(action: int, order) -> None:
    """A joint action's two halves name the two slots' orders of its DoubleBattleOrder."""
    first, second = split(action, 9)
    for sub, single in ((first, order.first_order), (second, order.second_order)):
        kind = type(single.order).__name__
        if sub == 0:
            assert single.message == "/choose pass"
        elif sub <= 6:
            assert kind == "Pokemon", (sub, single.message)
        else:
            assert kind == "Move", (sub, single.message)
            assert (sub - 7) % 5 - 2 == single.move_target
            assert ((sub - 7) // 20 == 1) == single.terastallize


def test_random_joint_actions_are_never_refused_by_the_simulator(caplog) -> None:
    """2,000+ decisions of random legal joint actions against poke-env's random doubles
    player: the simulator refuses none of either side's choices (an invalid choice would
    log a warning and be counted by the session), and every battle ends."""
    caplog.set_level(logging.WARNING)
    env = _doubles_env(seed=3)
    rng = np.random.default_rng(0)
    decisions = battles = 0
    refused = {"p1": 0, "p2": 0}
    try:
        obs, _ = env.reset()
        while decisions < 2000 or not battles:
            legal = env.legal_orders
            mask = obs["action_mask"]
            assert mask.shape == (SLOT * SLOT,) and set(np.flatnonzero(mask)) == set(legal)
            action = int(rng.choice(np.flatnonzero(mask)))
            _pair_is_consistent(action, legal[action])
            session = env._backend.session
            obs, _, terminated, truncated, info = env.step(action)
            decisions += 1
            assert "illegal_action" not in info
            if terminated or truncated:
                assert terminated and isinstance(info["won"], bool)
                for side, count in session.invalid_choices.items():
                    refused[side] += count
                battles += 1
                obs, _ = env.reset()
    finally:
        env.close()
    assert refused == {"p1": 0, "p2": 0}
    assert not [r for r in caplog.records if "sending default" in r.getMessage()]
    assert battles >= 20


@pytest.mark.parametrize("backend", ["direct", "server"])
def test_doubles_battles_play_to_the_end_on_both_backends(backend: str) -> None:
    env = _doubles_env(backend=backend, seed=5, opponent="max_power")
    rng = np.random.default_rng(1)
    try:
        for _ in range(2):
            obs, info = env.reset()
            assert f"-{FORMAT}-" in info["battle_tag"]
            while True:
                action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
                obs, _, terminated, truncated, info = env.step(action)
                assert "illegal_action" not in info
                if terminated or truncated:
                    break
            assert terminated and env.battle.finished and info["turns"] > 0
    finally:
        env.close()


def test_the_doubles_env_passes_the_gymnasium_and_sb3_checkers_without_warnings() -> None:
    env = gymnasium.make(mapleenv.ENV_ID, battle_format=FORMAT, encoder="doubles", seed=7)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            gymnasium_check_env(env.unwrapped)
            sb3_check_env(env.unwrapped, warn=True)
        checkers = ("gymnasium", "stable_baselines3")
        assert [str(w.message) for w in caught if any(c in w.filename for c in checkers)] == []
        obs, _ = env.reset()
        assert env.action_space.n == action_space_size(9, doubles=True) == SLOT * SLOT
        assert env.observation_space["observation"].contains(obs["observation"])
        assert (env.unwrapped.action_masks() == obs["action_mask"].astype(bool)).all()
    finally:
        env.close()


def test_masks_exclude_pairs_that_are_legal_apart_but_not_together() -> None:
    """Over real decisions: never both slots to the same Pokémon, never two Terastallizations
    in one turn, never pass + pass; and every single-slot order appears in some pair."""
    env = _doubles_env(seed=9)
    rng = np.random.default_rng(2)
    seen_tera = seen_switch_pair = 0
    try:
        obs, _ = env.reset()
        for _ in range(150):
            battle = env.battle
            legal = legal_actions(battle)
            for action, order in legal.items():
                first, second = order.first_order, order.second_order
                assert not (first.terastallize and second.terastallize)
                assert not (type(first.order).__name__ == "Pokemon" and first.order is second.order)
                assert split(action, 9) != (0, 0)
                seen_tera += first.terastallize or second.terastallize
                seen_switch_pair += split(action, 9)[0] in range(1, 7) and split(action, 9)[
                    1
                ] in range(1, 7)
            for pos, orders in enumerate(battle.valid_orders):
                messages = {o.message for o in orders}
                halves = {
                    (o.first_order if pos == 0 else o.second_order).message for o in legal.values()
                }
                assert messages <= halves | {"/choose pass"}
            action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
            obs, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                obs, _ = env.reset()
    finally:
        env.close()
    assert seen_tera and seen_switch_pair  # the cases above were met, not vacuous


def test_doubles_encoder_reads_both_actives_and_singles_encoders_are_refused() -> None:
    env = _doubles_env(seed=11)
    try:
        obs, _ = env.reset()
        vec = obs["observation"]
        start = sum(b.size for b in BLOCKS[: [b.name for b in BLOCKS].index("present")])
        assert vec[start : start + 4].tolist() == [1.0] * 4  # both actives a side
        assert np.isfinite(vec).all()
    finally:
        env.close()
    with pytest.raises(ValueError, match="encoder 'simple' reads singles battles.*encoder=doubles"):
        PokemonEnv(FORMAT, "random", encoder="simple")
    with pytest.raises(ValueError, match="encoder 'doubles' reads doubles battles"):
        PokemonEnv("gen9randombattle", "random", encoder="doubles")


def test_the_simulators_game_type_backs_the_format_name_rule() -> None:
    for fmt in (FORMAT, "gen9vgc2025regi", "gen9doublesou"):
        assert is_doubles_format(fmt)
        check_format(fmt, has_team=True)
    assert not is_doubles_format("gen9randombattle")
    with pytest.raises(ValueError, match="is a triples format"):
        check_format("gen5triplescustomgame", has_team=True)
