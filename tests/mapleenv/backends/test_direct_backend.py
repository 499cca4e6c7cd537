"""The direct backend against the real simulator (a Node child; no Showdown server)."""

from __future__ import annotations

import os
import random
import signal

import numpy as np
import pytest
from conftest import DirectPokemonEnv, child_node_pids, pid_alive
from poke_env.player.battle_order import DefaultBattleOrder
from poke_env.player.player import Player

import mapleenv
from mapleenv.actions import legal_actions
from mapleenv.backends.direct import DirectBackend, SimHost
from mapleenv.backends.direct.session import order_to_choice
from mapleenv.opponents import make_opponent
from mapleenv.reward import RewardConfig, state_value
from mapleenv.showdown import NodeNotFoundError, ShowdownNotInstalledError

pytestmark = pytest.mark.integration

SHAPED = RewardConfig(fainted_value=2.0, hp_value=1.0, status_value=0.5, victory_value=30.0)


def _strip_timestamps(lines: list[str]) -> list[str]:
    return [line for line in lines if not line.startswith("|t:|")]


def test_episodes_end_with_won_and_rewards_add_up_to_the_state_value() -> None:
    env = DirectPokemonEnv(opponent="random", reward=SHAPED, seed=11)
    try:
        rng = np.random.default_rng(0)
        for _ in range(2):
            obs, info = env.reset()
            assert info["battle_tag"].startswith("battle-gen9randombattle-")
            total = 0.0
            while True:
                mask = obs["action_mask"]
                assert obs["observation"].shape == env.observation_space["observation"].shape
                assert mask.dtype == np.int8 and mask.sum() >= 1
                obs, reward, terminated, truncated, info = env.step(
                    rng.choice(np.flatnonzero(mask))
                )
                total += reward
                if terminated or truncated:
                    break
            battle = env.battle
            assert terminated and not truncated and battle.finished
            assert info["won"] is bool(battle.won) and info["battle_tag"] == battle.battle_tag
            assert info["turns"] == battle.turn > 0
            assert total == pytest.approx(state_value(battle, SHAPED) - SHAPED.starting_value)
    finally:
        env.close()


def test_every_masked_in_action_is_accepted_by_the_simulator() -> None:
    """At each decision where the opponent also still has to choose, every legal action's
    order is sent to the simulator and undone: none may be rejected. The agent then plays
    a random legal action; the simulator must never reject a choice of either side."""
    backend = DirectBackend(
        battle_format="gen9randombattle", opponent=make_opponent("random"), seed=5
    )
    rng = np.random.default_rng(1)
    probed = 0
    try:
        for _ in range(2):
            battle = backend.reset()
            while not battle.finished:
                legal = legal_actions(battle)
                orders = [o for o in battle.valid_orders if not isinstance(o, DefaultBattleOrder)]
                assert {o.message for o in legal.values()} == {o.message for o in orders}
                session = backend.session
                if session._needs_choice["p2"]:
                    for order in legal.values():
                        assert session.probe_choice("p1", order_to_choice(order, battle)) is None
                        probed += 1
                action = rng.choice(sorted(legal))
                battle = backend.step(legal[action])
            session = backend.session
            assert session.invalid_choices == {"p1": 0, "p2": 0}
            assert session.opponent_battle.finished
            assert session.opponent_battle.won == battle.lost
            assert session.opponent_battle.lost == battle.won
    finally:
        backend.close()
    assert probed > 50


def test_probe_choice_reports_a_rejected_choice() -> None:
    backend = DirectBackend(
        battle_format="gen9randombattle", opponent=make_opponent("random"), seed=5
    )
    try:
        backend.reset()
        assert "Invalid choice" in backend.session.probe_choice("p1", "move 9")
    finally:
        backend.close()


def _play(seed: int, opponent: Player) -> tuple[list[str], list[tuple[str, str]], bool | None]:
    """One battle playing the last legal action; the opponent's random choices (forced
    switches) come from Python's ``random``, seeded here."""
    random.seed(1234)
    backend = DirectBackend(
        battle_format="gen9randombattle", opponent=opponent, seed=seed, record=True
    )
    try:
        battle = backend.reset()
        while not battle.finished:
            legal = legal_actions(battle)
            battle = backend.step(legal[max(legal)])
        session = backend.session
        output = [
            (kind, "\n".join(_strip_timestamps(data.split("\n"))))
            for kind, data in session.output_log
        ]
        return session.input_log, output, battle.won
    finally:
        backend.close()


def test_same_seed_replays_the_same_battle() -> None:
    opponent = make_opponent("max_power")
    first, second, other = _play(7, opponent), _play(7, opponent), _play(8, opponent)
    assert first == second
    assert first[0][0] != other[0][0]  # the >start line carries the seed
    assert first[1] != other[1]


def _first_teams(env: DirectPokemonEnv, **reset_kwargs) -> list[str]:
    env.reset(**reset_kwargs)
    return sorted(mon.species for mon in env.battle.team.values())


def test_env_seed_reaches_the_backend() -> None:
    """``PokemonEnv(seed=s)`` and ``reset(seed=s)`` seed the direct backend's battles."""
    envs = [DirectPokemonEnv(opponent="random", seed=s) for s in (11, 11, 12)]
    try:
        first, same, other = (_first_teams(env) for env in envs)
        assert first == same and first != other
        assert _first_teams(envs[2], seed=11) == first  # reset(seed=) on a live backend
    finally:
        for env in envs:
            env.close()


def test_killed_host_aborts_the_episode_and_reset_recovers() -> None:
    before = set(child_node_pids())  # e.g. a session-wide Showdown server
    env = DirectPokemonEnv(opponent="random", seed=3)
    try:
        obs, _ = env.reset()
        host_pid = env._backend.host.pid
        assert host_pid in child_node_pids()
        os.kill(host_pid, signal.SIGKILL)
        obs, reward, terminated, truncated, info = env.step(
            int(np.flatnonzero(obs["action_mask"])[0])
        )
        assert truncated and not terminated and "aborted" in info and reward == 0.0
        obs, info = env.reset()
        assert env._backend.host.pid != host_pid
        obs, *_ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        new_host = env._backend.host.pid
    finally:
        env.close()
    assert set(child_node_pids()) <= before
    assert not pid_alive(host_pid) and not pid_alive(new_host)


def test_every_battle_is_dropped_from_its_host_ended_or_not() -> None:
    """A host keeps a battle's state until the battle is destroyed. Ended battles were
    skipped, and each host grew 64-83 MB/min in training; now the env drops every battle
    when it moves on: one that ended by itself and one cut short by a reset."""
    env = DirectPokemonEnv(opponent="random", seed=5)
    sent: list[tuple[str, list[str]]] = []
    rng = np.random.default_rng(0)
    try:
        obs, _ = env.reset()
        host = env._backend.host
        send = host.send

        def recording(bid: str, lines: list[str]):
            sent.append((bid, list(lines)))
            return send(bid, lines)

        host.send = recording
        ended = env._backend.session.battle_id
        done = False
        while not done:
            obs, _, terminated, truncated, _ = env.step(
                int(rng.choice(np.flatnonzero(obs["action_mask"])))
            )
            done = terminated or truncated
        assert terminated  # the simulator ended it
        obs, _ = env.reset()
        cut_short = env._backend.session.battle_id
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        env.reset()
        assert ended != cut_short
        assert (ended, ["destroy"]) in sent and (cut_short, ["destroy"]) in sent, sent[-5:]
    finally:
        env.close()


def test_close_leaves_no_node_process() -> None:
    before = set(child_node_pids())
    env = DirectPokemonEnv(opponent="heuristic", seed=4)
    env.reset()
    pid = env._backend.host.pid
    assert pid_alive(pid) and pid not in before
    env.close()
    assert not pid_alive(pid) and set(child_node_pids()) <= before


def test_gymnasium_make_with_the_direct_backend() -> None:
    import gymnasium

    env = gymnasium.make(mapleenv.ENV_ID, opponent="max_power", backend="direct")
    try:
        obs, _ = env.reset(seed=1)
        assert env.observation_space.contains(obs)
    finally:
        env.close()


def test_clear_errors_for_missing_node_or_package(tmp_path, monkeypatch) -> None:
    with pytest.raises(ShowdownNotInstalledError, match="make setup"):
        SimHost(showdown_dir=tmp_path)
    with pytest.raises(NodeNotFoundError, match="make setup"):
        SimHost(node=str(tmp_path / "no-node"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(NodeNotFoundError):
        SimHost()
