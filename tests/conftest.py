"""Shared pytest fixtures.

``showdown_server`` is one real Showdown server for the whole test session (started on
first use, stopped at the end); integration tests take it as a fixture and mark
themselves ``@pytest.mark.integration``.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import os
import random
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from poke_env.battle.abstract_battle import AbstractBattle
from poke_env.battle.battle import Battle
from poke_env.concurrency import POKE_LOOP
from poke_env.player.battle_order import BattleOrder, DefaultBattleOrder
from poke_env.player.player import Player
from poke_env.ps_client import AccountConfiguration
from process_guard import GUARD

from mapleenv.env import PokemonEnv
from mapleenv.showdown import ShowdownServer
from mapleenv.vector.local import make_vector_env

# The suite is a shared box: two xdist workers and the processes they start all run torch.
# libgomp's threads spin at every barrier by default, and beside a busy process that turns a
# 7 s training test into 70 s (docs/results/benchmarks.md, "Update threads on a shared
# box"). Sleeping threads cost little here; libgomp reads this once, when torch loads, so it
# is set before anything imports torch here, and the processes tests start inherit it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
if "torch" in sys.modules:  # a plugin loaded it first: only the started processes sleep
    warnings.warn(
        "torch loaded before tests/conftest.py: OMP_WAIT_POLICY is not in effect here",
        stacklevel=1,
    )

DATA_DIR = Path(__file__).parent / "data"
RECORDED_BATTLES = sorted(DATA_DIR.glob("*.jsonl.gz"))


@pytest.fixture(autouse=True)
def _same_global_random_draws() -> None:
    """poke-env's random players (and ``random.choice`` in tests) draw from Python's global
    RNG: seeded before each test, a test plays the same battles every run and in any order,
    so a failure repeats (the fidelity test failed 1 run in 4 before it seeded it)."""
    random.seed(0)


@pytest.fixture(scope="session")
def showdown_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShowdownServer]:
    """A running :class:`~mapleenv.showdown.ShowdownServer` shared by the session."""
    server = ShowdownServer(log_dir=tmp_path_factory.mktemp("showdown"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _live_node(process: psutil.Process) -> bool:
    try:
        return process.name() == "node" and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def child_node_pids(parent: int | None = None) -> list[int]:
    """PIDs of live ``node`` processes whose parent is ``parent`` (default: this process)."""
    try:
        children = psutil.Process(parent).children()
    except psutil.NoSuchProcess:
        return []
    return [p.pid for p in children if _live_node(p)]


def descendant_node_pids() -> list[int]:
    """PIDs of live ``node`` processes anywhere below this process."""
    return [p.pid for p in psutil.Process().children(recursive=True) if _live_node(p)]


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


# --------------------------------------------------- direct-backend test helpers


def DirectPokemonEnv(*args: Any, **kwargs: Any) -> PokemonEnv:  # noqa: N802 (a class once)
    """``PokemonEnv`` on the direct-simulator backend (``server`` is dropped)."""
    kwargs["backend"] = "direct"
    kwargs.pop("server", None)
    return PokemonEnv(*args, **kwargs)


def make_direct_vector_env(num_envs: int, *, sim_hosts: int | None = None, **kwargs: Any):
    """``make_vector_env(num_envs, backend="direct", sim_hosts=sim_hosts, ...)``."""
    return make_vector_env(num_envs, backend="direct", sim_hosts=sim_hosts, **kwargs)


# ------------------------------------------------------------ recorded battle replay


class _ReplayPlayer(Player):
    """Feeds recorded frames through poke-env's own message handling (no socket)."""

    def __init__(self, username: str, on_decision: Callable[[AbstractBattle], Any]):
        super().__init__(
            account_configuration=AccountConfiguration(username, None),
            battle_format="gen9randombattle",
            start_listening=False,
            log_level=logging.ERROR,
        )
        self.on_decision = on_decision
        self.results: list[Any] = []

        async def _drop(*args: Any, **kwargs: Any) -> None:  # nothing to send to
            return None

        self.ps_client.send_message = _drop  # type: ignore[method-assign]

    def choose_move(self, battle: AbstractBattle) -> BattleOrder:
        self.results.append(self.on_decision(battle))
        return DefaultBattleOrder()


def load_frames(path: Path) -> list[str]:
    """Frames of a recording (``record_dir`` output, ``.jsonl`` or ``.jsonl.gz``)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return [json.loads(line) for line in f]


def _recorded_username(frames: list[str]) -> str:
    for frame in frames:
        for line in frame.split("\n"):
            if line.startswith("|request|{"):
                return json.loads(line[len("|request|") :])["side"]["name"]
    raise ValueError("no request in the recording")


def replay_decisions(
    path: Path, on_decision: Callable[[AbstractBattle], Any]
) -> tuple[list[Any], AbstractBattle]:
    """Replay a recorded battle; ``on_decision(battle)`` runs at each decision the
    recorded player had to make. Returns its results and the final battle."""
    frames = load_frames(path)
    player = _ReplayPlayer(_recorded_username(frames), on_decision)
    for frame in frames:
        split = [message.split("|") for message in frame.split("\n")]
        asyncio.run_coroutine_threadsafe(player._handle_battle_message(split), POKE_LOOP).result(30)
    (battle,) = player.battles.values()
    return player.results, battle


# ------------------------------------------------------------- synthetic battles


def _request_mon(
    species: str, level: int, condition: str, moves: list[str], active: bool
) -> dict[str, Any]:
    return {
        "ident": f"p1: {species}",
        "details": f"{species}, L{level}",
        "condition": condition,
        "active": active,
        "stats": {"atk": 100, "def": 100, "spa": 100, "spd": 100, "spe": 100},
        "moves": moves,
        "baseAbility": "pressure",
        "item": "",
        "pokeball": "pokeball",
        "ability": "pressure",
        "commanding": False,
        "reviving": False,
        "teraType": "Normal",
        "terastallized": "",
    }


def synthetic_battle(
    team: list[tuple[str, int, str, list[str]]],
    request_moves: list[str] | None = None,
    opponent_messages: list[list[str]] = (),
    can_tera: bool = False,
    trapped: bool = False,
) -> Battle:
    """A gen 9 ``Battle`` seen by p1 ("maple") built from a crafted request.

    ``team``: (species, level, condition like "50/100 par" or "0 fnt", moves); the
    first entry is active and ``request_moves`` (default: its moves) are offered.
    ``opponent_messages``: protocol lines for p2, e.g. ``["switch", "p2a: Gyarados",
    "Gyarados, L80", "100/100"]``.
    """
    battle = Battle("battle-gen9randombattle-1", "maple", logging.getLogger("synthetic"), gen=9)
    species, level, condition, moves = team[0]
    offered = moves if request_moves is None else request_moves
    active: dict[str, Any] = {
        "moves": [
            {"move": m, "id": m, "pp": 10, "maxpp": 10, "target": "normal", "disabled": False}
            for m in offered
        ]
    }
    if can_tera:
        active["canTerastallize"] = "Normal"
    if trapped:
        active["trapped"] = True
    request = {
        "active": [active],
        "rqid": 1,
        "side": {
            "name": "maple",
            "id": "p1",
            "pokemon": [
                _request_mon(s, lv, c, mv, i == 0) for i, (s, lv, c, mv) in enumerate(team)
            ],
        },
    }
    battle.parse_request(request)
    battle.parse_message(["", "switch", f"p1a: {species}", f"{species}, L{level}", condition])
    for message in opponent_messages:
        battle.parse_message(["", *message])
    return battle


# ------------------------------------------------------------------------- markers

_HEAVY = ("integration", "slow", "ray")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that starts no real process (not marked integration, slow or ray) is a
    ``unit`` test: ``make test-fast`` runs those (``-m unit``); one that starts a process
    fails (the hooks below, tests/process_guard.py). A test given its backend
    as a parameter is ``pinned_backend`` (the CI's server pass leaves it out: it ran both
    already). Ray tests share one xdist group: with ``-n 2 --dist loadgroup`` (``make
    test``) they run one after another, never two local Ray instances at once."""
    for item in items:
        if not any(item.get_closest_marker(name) for name in _HEAVY):
            item.add_marker(pytest.mark.unit)
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "backend" in callspec.params:
            item.add_marker(pytest.mark.pinned_backend)
        if item.get_closest_marker("ray"):
            item.add_marker(pytest.mark.xdist_group("ray"))


def _guarded_phase(item: pytest.Item) -> Iterator[None]:
    """Run one phase of ``item`` with process starts blocked when it is a ``unit`` test;
    fail it if it tried one, even where its code caught the error."""
    if not item.get_closest_marker("unit"):
        return (yield)
    GUARD.install()
    try:
        result = yield
    finally:
        GUARD.uninstall()
    if GUARD.attempts:
        pytest.fail(f"a unit test started a process: {GUARD.attempts}; mark it integration")
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """The unit tier starts no process, checked: fixture setup (tests/process_guard.py)."""
    return (yield from _guarded_phase(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """The unit tier starts no process, checked: the test body (tests/process_guard.py)."""
    return (yield from _guarded_phase(item))
