"""``mapleenv.parallel_env``: both seats of real simulator battles as PettingZoo agents."""

from __future__ import annotations

import os
import signal
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from builders import BODY_SLAM, REST, RESTING_SNORLAX, SLEEP_TALK, TERA
from conftest import child_node_pids
from pettingzoo.test import parallel_api_test
from warm_cli import run_python

import mapleenv
from mapleenv.actions import legal_actions, mask_from_legal
from mapleenv.encoders.features.certain import without_futile
from mapleenv.multiagent import ShowdownParallelEnv

PASS_MASK = np.eye(26, dtype=np.int8)[0]  # no decision: action 0 only, the action is ignored


def random_legal(obs, rng) -> int:
    return int(rng.choice(np.flatnonzero(obs["action_mask"])))


@pytest.mark.integration
def test_parallel_api_test_passes_without_warnings():
    env = mapleenv.parallel_env(seed=0)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            parallel_api_test(env, num_cycles=1000)
    finally:
        env.close()
    assert [str(w.message) for w in caught if "pettingzoo" in w.filename] == []


@pytest.mark.integration
def test_battles_to_the_end_with_random_legal_actions_on_both_sides():
    env = mapleenv.parallel_env(seed=1, on_illegal="raise")
    rng = np.random.default_rng(1)
    one_sided_steps = 0
    try:
        for _ in range(3):
            obs, infos = env.reset()
            assert env.agents == ["p1", "p2"] and set(obs) == set(infos) == {"p1", "p2"}
            tag = infos["p1"]["battle_tag"]
            for _ in range(2000):
                acting = [a for a in env.agents if infos[a]["needs_action"]]
                assert acting, "the battle waits for nobody"
                one_sided_steps += len(acting) == 1
                for agent in env.agents:
                    assert env.observation_space(agent).contains(obs[agent])
                    assert np.array_equal(env.action_masks(agent), obs[agent]["action_mask"] == 1)
                    if agent not in acting:
                        assert np.array_equal(obs[agent]["action_mask"], PASS_MASK)
                # a waiting agent's action is ignored, even one the mask rules out
                actions = {a: random_legal(obs[a], rng) if a in acting else 25 for a in env.agents}
                obs, rewards, terms, truncs, infos = env.step(actions)
                assert rewards["p1"] == -rewards["p2"]  # default reward: +-1 at the end
                assert not any("illegal_action" in info for info in infos.values())
                if terms["p1"]:
                    break
            else:
                raise AssertionError("battle did not end")
            assert terms == {"p1": True, "p2": True} and truncs == {"p1": False, "p2": False}
            assert env.agents == []
            p1, p2 = env.battles["p1"], env.battles["p2"]
            assert p1.finished and p2.finished and p1.battle_tag == p2.battle_tag == tag
            assert infos["p1"]["won"] != infos["p2"]["won"] or not (p1.won or p2.won)  # or a tie
            assert rewards["p1"] == (1.0 if infos["p1"]["won"] else -1.0 if p1.lost else 0.0)
            assert infos["p1"]["turns"] == infos["p2"]["turns"] == p1.turn >= 1
        assert one_sided_steps > 0  # forced switches: turns where only one agent acts
    finally:
        env.close()


def _play(env: ShowdownParallelEnv, seed: int, steps: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    seen = [obs["p1"]["observation"], obs["p2"]["observation"]]
    for _ in range(steps):
        if not env.agents:
            break
        obs, *_ = env.step({a: random_legal(obs[a], rng) for a in env.agents})
        seen += [obs["p1"]["observation"], obs["p2"]["observation"]]
    return seen


@pytest.mark.integration
def test_same_seed_and_actions_replay_the_same_battle():
    env = mapleenv.parallel_env()
    try:
        first, other, again = _play(env, 3, 15), _play(env, 4, 15), _play(env, 3, 15)
    finally:
        env.close()
    assert len(first) == len(again) and all(
        np.array_equal(a, b) for a, b in zip(first, again, strict=True)
    )
    assert not np.array_equal(first[0], other[0])


@pytest.mark.integration
def test_illegal_actions_raise_or_play_the_default_and_max_turns_truncates():
    env = mapleenv.parallel_env(seed=2, max_turns=2, on_illegal="raise")
    try:
        obs, _ = env.reset()
        illegal = int(np.flatnonzero(obs["p1"]["action_mask"] == 0)[0])
        legal = random_legal(obs["p2"], np.random.default_rng(0))
        with pytest.raises(ValueError, match=f"illegal action {illegal} for p1"):
            env.step({"p1": illegal, "p2": legal})
        with pytest.raises(ValueError, match="agent p1 must act"):
            env.step({"p2": legal})
        env.on_illegal = "default"
        obs, _, terms, truncs, infos = env.step({"p1": illegal, "p2": legal})
        assert infos["p1"]["illegal_action"] is True and "illegal_action" not in infos["p2"]
        rng = np.random.default_rng(1)
        while env.agents:
            obs, _, terms, truncs, infos = env.step(
                {a: random_legal(obs[a], rng) for a in env.agents}
            )
        assert truncs == {"p1": True, "p2": True} and not terms["p1"]
        assert infos["p1"]["turns"] == 2 and infos["p1"]["won"] is infos["p2"]["won"] is False
        with pytest.raises(RuntimeError, match="reset"):
            env.step({"p1": 0, "p2": 0})
    finally:
        env.close()


def _first_turn_masks(mask_futile: bool) -> dict[str, np.ndarray]:
    """Both seats' masks of the first turn; every decision's mask is checked against
    ``without_futile`` of the seat's legal actions (on) or the legal actions (off)."""
    env = mapleenv.parallel_env(
        battle_format="gen9ou",
        team=RESTING_SNORLAX,
        seed=5,
        max_turns=8,
        on_illegal="raise",
        mask_futile=mask_futile,
    )
    rng, first = np.random.default_rng(5), {}
    try:
        obs, infos = env.reset()
        while env.agents:
            for side in env.agents:
                battle = env.battles[side]
                if infos[side]["needs_action"] and not battle.teampreview:
                    legal = legal_actions(battle)
                    expected = without_futile(legal, battle) if mask_futile else legal
                    assert np.array_equal(obs[side]["action_mask"], mask_from_legal(expected, 26))
                    first.setdefault(side, obs[side]["action_mask"].copy())
            obs, _, _, _, infos = env.step({a: random_legal(obs[a], rng) for a in env.agents})
    finally:
        env.close()
    return first


@pytest.mark.integration
def test_mask_futile_drops_the_moves_that_surely_fail_for_both_seats():
    masked, plain = _first_turn_masks(True), _first_turn_masks(False)
    futile = [REST, SLEEP_TALK, REST + TERA, SLEEP_TALK + TERA]
    for side in ("p1", "p2"):
        assert not masked[side][futile].any() and masked[side][BODY_SLAM]
        assert plain[side][futile].all()


@pytest.mark.integration
def test_a_killed_host_truncates_the_battle_and_close_leaves_no_node():
    before = set(child_node_pids())
    env = mapleenv.parallel_env(seed=3)
    rng = np.random.default_rng(3)
    try:
        obs, _ = env.reset()
        (host,) = set(child_node_pids()) - before
        os.kill(host, signal.SIGKILL)
        obs, rewards, terms, truncs, infos = env.step(
            {a: random_legal(obs[a], rng) for a in env.agents}
        )
        assert truncs == {"p1": True, "p2": True} and terms == {"p1": False, "p2": False}
        assert rewards == {"p1": 0.0, "p2": 0.0} and "aborted" in infos["p1"]
        assert env.agents == []
        obs, _ = env.reset()  # a new host
        assert env.agents == ["p1", "p2"] and set(child_node_pids()) - before - {host}
        obs, *_ = env.step({a: random_legal(obs[a], rng) for a in env.agents})
    finally:
        env.close()
    env.close()  # idempotent
    assert set(child_node_pids()) <= before


@pytest.mark.integration  # node lists the simulator's formats
def test_bad_arguments():
    with pytest.raises(ValueError, match="encoder 'simple' reads singles battles"):
        mapleenv.parallel_env(battle_format="gen9randomdoublesbattle", encoder="simple")
    with pytest.raises(ValueError, match="on_illegal must be one of.*'skip'"):
        mapleenv.parallel_env(on_illegal="skip")
    with pytest.raises(ValueError, match="max_turns"):
        mapleenv.parallel_env(max_turns=0)
    with pytest.raises(RuntimeError, match="reset"):
        mapleenv.parallel_env().step({"p1": 0, "p2": 0})


@pytest.mark.integration
@pytest.mark.timeout(700)
def test_the_self_play_example_runs():
    script = Path(__file__).resolve().parents[2] / "examples" / "selfplay_pettingzoo.py"
    result = run_python(
        [sys.executable, str(script), "--rounds", "2", "--battles", "2"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "round   2: p1 won" in result.stdout
