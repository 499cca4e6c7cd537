"""PokemonEnv on both backends: a real Showdown server and the direct simulator host."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import gymnasium
import numpy as np
import pytest
from conftest import child_node_pids, pid_alive, replay_decisions

import mapleenv
from mapleenv.backends import register_backend
from mapleenv.backends.websocket import ChallengeRefused, ShowdownBackend
from mapleenv.env import PokemonEnv
from mapleenv.showdown import ShowdownError, free_port

# the tests marked backends use the default backend: the CI's second pass repeats them with
# MAPLE_BACKEND=server (the others name their backend, or start no env)

MOVES = slice(6, 10)
MOVE_FEATURES = slice(82, 86)  # SinglesBasicEncoder: power x effectiveness of move slots 0-3


def greedy_action(obs, rng) -> int:
    """Strongest legal move by the encoder's move features, else a random legal action."""
    mask = obs["action_mask"]
    moves = np.flatnonzero(mask[MOVES])
    if len(moves):
        return 6 + int(moves[np.argmax(obs["observation"][MOVE_FEATURES][moves])])
    return int(rng.choice(np.flatnonzero(mask)))


def play(env, rng, max_steps: int = 2000):
    """One episode; returns (total reward, steps, last info, terminated, truncated)."""
    obs, info = env.reset()
    assert info["battle_tag"].startswith("battle-gen9randombattle-")
    total, steps = 0.0, 0
    for steps in range(1, max_steps + 1):  # noqa: B007
        assert env.observation_space.contains(obs)
        assert obs["action_mask"].any()
        obs, reward, terminated, truncated, info = env.step(greedy_action(obs, rng))
        total += reward
        if terminated or truncated:
            assert "aborted" not in info, info
            return total, steps, info, terminated, truncated
    raise AssertionError("battle did not end")


@pytest.fixture(params=["server", "direct"])
def backend(request) -> dict:
    """``PokemonEnv`` kwargs for each backend (the session's server for ``server``)."""
    if request.param == "server":
        return {"server": request.getfixturevalue("showdown_server")}
    return {"backend": "direct"}


@pytest.mark.integration
@pytest.mark.parametrize("opponent", ["random", "max_power", "heuristic"])
def test_full_episode_against_each_opponent(backend, opponent):
    env = PokemonEnv(opponent=opponent, **backend)
    try:
        total, steps, info, terminated, truncated = play(env, np.random.default_rng(1))
    finally:
        env.close()
    assert terminated and not truncated
    assert isinstance(info["won"], bool) and info["turns"] >= 1
    assert total == (1.0 if info["won"] else -1.0)  # default reward: +-1 at the end only
    assert env.battle.finished and env.battle.won == info["won"]


@pytest.mark.integration
def test_an_env_without_a_policy_opponent_never_imports_torch():
    """``gym.make`` and a battle against scripts need no network: torch (seconds and
    ~130 MB to import) stays out of the process; a ``policy:`` opponent brings it in. The
    mix is given as a mapping of weights, as the trainer's ``env.opponent`` is."""
    code = (
        "import sys, gymnasium, numpy as np, mapleenv\n"
        "env = gymnasium.make('mapleenv/Showdown-v0', opponent={'heuristic': 0.5, 'random': 0.5})\n"
        "obs, _ = env.reset(seed=0)\n"
        "obs, *_ = env.step(int(np.flatnonzero(obs['action_mask'])[0]))\n"
        "env.close()\n"
        "print('torch' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[-1] == "False", result.stdout


@pytest.mark.integration
def test_gym_make_battles_survive_server_kills_and_close_leaves_nothing(no_new_threads):
    before = set(child_node_pids())
    env = gymnasium.make(mapleenv.ENV_ID, opponent="random", backend="server")  # embedded
    rng = np.random.default_rng(2)
    try:
        assert env.observation_space["observation"].shape == (116,)
        assert env.action_space.n == 26
        _, _, info, terminated, _ = play(env, rng)
        assert terminated and isinstance(info["won"], bool)
        server = env.unwrapped.server
        first_pid = server.pid

        # killed while the env is idle between battles: the next reset restarts it
        os.kill(server.pid, signal.SIGKILL)
        _, _, info, terminated, _ = play(env, rng)
        assert terminated and server.pid != first_pid and server.restarts == 1

        # killed in the middle of a battle: the episode is truncated as aborted
        obs, _ = env.reset()
        os.kill(server.pid, signal.SIGKILL)
        obs, reward, terminated, truncated, info = env.step(greedy_action(obs, rng))
        assert truncated and not terminated and reward == 0.0
        assert "aborted" in info and "won" not in info
        _, _, info, terminated, _ = play(env, rng)
        assert terminated and server.restarts == 2
        last_pid = server.pid
    finally:
        env.close()
    env.close()  # idempotent
    assert not pid_alive(last_pid)
    assert set(child_node_pids()) <= before


@pytest.fixture
def no_new_threads():
    before = {t.ident for t in threading.enumerate()}
    yield
    leaked = [t for t in threading.enumerate() if t.ident not in before and not t.daemon]
    assert leaked == []
    assert [
        t for t in threading.enumerate() if t.name == "maple-env-loop" and t.ident not in before
    ] == []


@pytest.mark.integration
def test_illegal_action_raises_and_the_battle_goes_on(backend):
    env = PokemonEnv(on_illegal="raise", **backend)
    try:
        obs, _ = env.reset()
        illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
        with pytest.raises(ValueError, match=f"illegal action {illegal}"):
            env.step(illegal)
        turn = env.battle.turn
        obs, *_ = env.step(greedy_action(obs, np.random.default_rng(3)))
        assert env.battle.turn >= turn
    finally:
        env.close()


@pytest.mark.integration
def test_illegal_action_plays_the_default_choice_by_default(backend):
    if "backend" in backend:  # direct: the simulator input shows what was sent
        backend = {**backend, "backend_kwargs": {"record": True}}
    env = PokemonEnv(seed=7, **backend)
    try:
        assert env.on_illegal == "default"
        obs, _ = env.reset()
        assert np.array_equal(env.action_masks(), obs["action_mask"].astype(bool))
        illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
        request = env.battle.last_request
        obs, _, terminated, truncated, info = env.step(illegal)
        assert info.get("illegal_action") is True and not truncated
        assert terminated or env.battle.last_request is not request  # the choice was taken
        assert np.array_equal(env.action_masks(), obs["action_mask"].astype(bool))
        if "backend" in backend:
            p1_lines = [line for line in env._backend.session.input_log if line[:3] == ">p1"]
            assert p1_lines == [">p1 default"]
        _, _, _, _, info = env.step(greedy_action(obs, np.random.default_rng(3)))
        assert "illegal_action" not in info
    finally:
        env.close()


@pytest.mark.integration
def test_max_turns_truncates_and_the_next_reset_forfeits(showdown_server, tmp_path):
    env = PokemonEnv(
        server=showdown_server,
        max_turns=2,
        record_dir=tmp_path,
        reward={"hp_value": 1.0, "fainted_value": 1.0},
    )
    rng = np.random.default_rng(4)
    try:
        _, steps, info, terminated, truncated = play(env, rng)
        assert truncated and not terminated and info["won"] is False
        assert info["turns"] == 2 and steps <= 3
        first = info["battle_tag"]
        _, _, info, _, truncated = play(env, rng)
        assert truncated and info["battle_tag"] != first
    finally:
        env.close()
    # the first battle was forfeited by the second reset; its recording replays to a loss:
    # every step answered a turn-1 request (a faint or U-turn adds one), the turn-2 request
    # was left unanswered
    decisions, battle = replay_decisions(tmp_path / f"{first}.jsonl", lambda b: b.turn)
    assert decisions == [1] * steps + [2], (steps, decisions)
    assert battle.finished and battle.lost


@pytest.mark.integration
def test_registered_backend_is_used(showdown_server):
    made = []

    def factory(*, battle_format, opponent, seed, log_dir, team, **kwargs):
        made.append(kwargs)
        return ShowdownBackend(showdown_server.server_configuration, battle_format, opponent)

    register_backend("test-loopback", factory)
    env = PokemonEnv(backend="test-loopback", backend_kwargs={"flag": 1})
    try:
        _, _, info, terminated, _ = play(env, np.random.default_rng(5))
        assert terminated and made == [{"flag": 1}] and env.server is None
    finally:
        env.close()


@pytest.mark.integration
def test_unreachable_external_server_is_a_clear_error():
    env = PokemonEnv(server=f"127.0.0.1:{free_port()}", reconnect_timeout=0.5)
    with pytest.raises(ShowdownError, match="unreachable"):
        env.reset()
    env.close()


@pytest.mark.parametrize(
    ("battle_format", "says"),
    [
        ("gen9nonsense", 'Unrecognized format "gen9nonsense"'),
        ("gen9ou", "This format requires you to use your own team."),
    ],
)
@pytest.mark.integration
def test_a_server_refusing_the_battle_ends_the_reset_at_once_with_its_words(
    showdown_server, battle_format, says
):
    """An external server is not checked against the package's format list: its refusal
    (a popup) ends the reset with the server's own text, not after the 60-s reply timeout
    and the reconnect retries (~63 s for one attempt before)."""
    env = PokemonEnv(server=showdown_server.url, battle_format=battle_format, reconnect_timeout=30)
    try:
        for _ in range(2):  # and again: the refused attempt left nothing waiting
            started = time.monotonic()
            with pytest.raises(ChallengeRefused, match=f"refused the battle \\({battle_format}\\)"):
                try:
                    env.reset()
                except ChallengeRefused as exc:
                    assert says in str(exc)
                    raise
            assert time.monotonic() - started < 20
    finally:
        env.close()


@pytest.mark.backends
@pytest.mark.integration  # node lists the simulator's formats
def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown opponent 'nobody'.*random, max_power"):
        PokemonEnv(opponent="nobody")
    with pytest.raises(NotImplementedError, match="backend 'nonexistent'"):
        PokemonEnv(backend="nonexistent")
    with pytest.raises(ValueError, match="singles"):
        PokemonEnv(battle_format="gen9randomdoublesbattle", encoder="simple")
    with pytest.raises(ValueError, match="unknown reward key"):
        PokemonEnv(reward={"victory": 1})
    with pytest.raises(ValueError, match="on_illegal must be one of.*'ignore'"):
        PokemonEnv(on_illegal="ignore")
    with pytest.raises(RuntimeError, match="reset"):
        PokemonEnv().action_masks()
    env = PokemonEnv()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    env.close()


@pytest.mark.integration
def test_teacher_action_is_the_teachers_legal_choice():
    env = PokemonEnv(backend="direct", teacher="heuristic", opponent="random", seed=6)
    try:
        assert env.observation_space["teacher_action"].shape == (1,)
        obs, _ = env.reset()
        for _ in range(200):
            assert env.observation_space.contains(obs)
            action = int(obs["teacher_action"][0])
            assert action >= 0 and obs["action_mask"][action] == 1
            chosen = env.teacher.choose_move(env.battle).message
            assert env.legal_orders[action].message == chosen
            obs, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                break
    finally:
        env.close()


@pytest.mark.integration
def test_finished_battles_leave_nothing_waiting_on_the_event_loop(showdown_server):
    """A finished battle's room still sends a message or two after the env forgot the
    battle. poke-env waited for that battle forever in a task, and every later message of
    the room queued behind it: ~2 tasks per battle, for as long as the env lived (workers
    grew ~0.6 MB/min on the server backend). Now those messages are dropped."""
    import asyncio

    env = PokemonEnv(server=showdown_server.url, opponent="random")
    rng = np.random.default_rng(0)

    async def pending() -> list[str]:
        here = asyncio.current_task()
        return [t.get_coro().__qualname__ for t in asyncio.all_tasks() if t is not here]

    try:
        for _ in range(12):
            env.reset()
            done = False
            while not done:
                action = rng.choice(np.flatnonzero(env.action_masks()))
                _, _, terminated, truncated, _ = env.step(action)
                done = terminated or truncated
        backend = env._backend
        assert isinstance(backend, ShowdownBackend)
        # the last battle's messages may still be in flight: their handlers must end
        deadline = time.monotonic() + 20
        while True:
            tasks = asyncio.run_coroutine_threadsafe(pending(), backend._loop).result(10)
            handlers = [name for name in tasks if name.endswith("_watch_popups")]
            if not handlers or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert not handlers, tasks
    finally:
        env.close()
