"""``PokemonEnv``: one singles battle per episode against a named opponent.

The env is split in two:

* :class:`PokemonEnv` (backend-independent) turns battles into Gymnasium steps: the
  encoder, the exact action mask (:mod:`mapleenv.actions`), the reward tracker, the
  opponent, truncation and ``info``.
* A *backend* produces the battles: ``reset() -> Battle`` (the agent's first
  decision), ``step(order) -> Battle`` (play the agent's order, let the opponent
  answer its own requests, return at the agent's next decision or at the end),
  ``close()``. The built-in ``"server"`` backend is :class:`ShowdownBackend` (two
  poke-env players on a Showdown websocket); others are added with
  :func:`register_backend` and selected with ``backend=<name>``.

Every observation is a real decision: "wait" requests and opponent-only decisions
(e.g. the opponent's forced switch) are played through inside a step.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple, Protocol
from urllib.parse import urlsplit

import gymnasium
import numpy as np
from gymnasium import spaces
from poke_env.battle.abstract_battle import AbstractBattle
from poke_env.battle.battle import Battle
from poke_env.data import GenData
from poke_env.player.battle_order import BattleOrder, ForfeitBattleOrder
from poke_env.player.player import Player
from poke_env.ps_client import AccountConfiguration
from poke_env.ps_client.server_configuration import ServerConfiguration

from mapleenv.actions import action_space_size, describe_legal, legal_actions, mask_from_legal
from mapleenv.encoding import BattleEncoder, make_encoder, observation_box
from mapleenv.opponents import make_opponent, unique_username
from mapleenv.reward import RewardConfig, RewardTracker
from mapleenv.server import (
    ShowdownError,
    ShowdownServer,
    external_server,
    port_is_open,
)

logger = logging.getLogger(__name__)


class BattleAborted(RuntimeError):
    """The battle cannot go on (connection lost, server gone, no reply in time)."""


class BattleBackend(Protocol):
    """Source of battles for :class:`PokemonEnv` (see module docs)."""

    def reset(self, seed: int | None = None) -> Battle: ...

    def step(self, order: BattleOrder) -> Battle: ...

    def close(self) -> None: ...


BackendFactory = Callable[..., BattleBackend]
"""``factory(*, battle_format, opponent, seed, log_dir, team, **backend_kwargs) -> BattleBackend``;
``backend.reset(seed=s)`` restarts the backend's battle seeds (a backend that cannot
seed its battles, like the websocket one, ignores it)."""

BACKENDS: dict[str, BackendFactory] = {}

# Modules that register a backend, imported on first use of its name (in any process,
# e.g. a spawned vector-env worker).
BACKEND_PLUGINS: dict[str, str] = {"direct": "mapleenv.direct"}


def register_backend(name: str, factory: BackendFactory) -> None:
    """Make ``PokemonEnv(backend=name)`` (and ``make_vector_env(backend=name)``) use
    ``factory``. ``"server"`` is built in and cannot be replaced."""
    if name == "server":
        raise ValueError("the 'server' backend is built in")
    BACKENDS[name] = factory


def backend_available(name: str) -> bool:
    """Whether ``backend=name`` can be used (importing its plugin module if needed)."""
    if name == "server" or name in BACKENDS:
        return True
    module = BACKEND_PLUGINS.get(name)
    if module is not None:
        importlib.import_module(module)
    return name in BACKENDS


# ------------------------------------------------------------------ websocket backend

_CLOSED = object()  # event payload: a player's websocket listener ended


class _NoOrder(BattleOrder):
    """Answer to a request that no longer matters (its battle ended): sends nothing."""

    @property
    def message(self) -> str:
        return ""


class _Event(NamedTuple):
    role: str  # "agent", "rival" or "challenge"
    item: Any  # a Battle, _CLOSED, or the challenge's exception
    reply: asyncio.Future | None = None  # set for a decision: resolve it with the order


class _DrivenPlayer(Player):
    """A poke-env Player whose decisions are made by the env's thread.

    Each decision and each finished battle is put on ``events`` (a thread-safe queue
    shared by both players); a decision carries its own future, resolved with
    :meth:`answer` -- so an order can never reach another request.
    """

    def __init__(self, role: str, events: queue.SimpleQueue, *, record: bool = False,
                 **kwargs: Any):
        super().__init__(start_listening=False, **kwargs)
        self.role = role
        self._events = events
        self.frames: list[str] | None = [] if record else None
        self.listener: Any = None
        self.listener_task: asyncio.Task | None = None

    def connect(self) -> None:
        self.listener = asyncio.run_coroutine_threadsafe(self._listen(), self.ps_client.loop)
        self.listener.add_done_callback(lambda _: self._events.put(_Event(self.role, _CLOSED)))

    async def _listen(self) -> None:
        self.listener_task = asyncio.current_task()
        await self.ps_client.listen()

    def choose_move(self, battle: AbstractBattle) -> Any:
        return self._await_order(battle)

    async def _await_order(self, battle: AbstractBattle) -> BattleOrder:
        reply = self.ps_client.loop.create_future()
        self._events.put(_Event(self.role, battle, reply))
        return await reply

    def answer(self, reply: asyncio.Future, order: BattleOrder) -> None:
        """Resolve a decision's future with ``order`` (thread-safe, once)."""
        def resolve() -> None:
            if not reply.done():
                reply.set_result(order)

        self.ps_client.loop.call_soon_threadsafe(resolve)

    def teampreview(self, battle: AbstractBattle) -> str:
        return self.random_teampreview(battle)

    def _battle_finished_callback(self, battle: AbstractBattle) -> None:
        self._events.put(_Event(self.role, battle))

    async def _handle_battle_message(self, split_messages: list[list[str]]) -> None:
        if self.frames is not None:
            self.frames.append("\n".join("|".join(m) for m in split_messages))
        await super()._handle_battle_message(split_messages)


class ShowdownBackend:
    """Battles on a Showdown server: the agent and the opponent's seat are two
    poke-env players on their own event-loop thread; the opponent ``Player`` chooses
    for its seat synchronously.

    Waits are bounded by ``timeout``; a closed connection or a timeout raises
    :class:`BattleAborted` (the env then drops this backend and reconnects).
    """

    def __init__(self, server_configuration: ServerConfiguration, battle_format: str,
                 opponent: Player, *, team: Any = None, timeout: float = 60.0,
                 record_dir: str | Path | None = None, log_level: int = logging.WARNING):
        self.server_configuration = server_configuration
        self.opponent = opponent
        self.timeout = timeout
        self.record_dir = Path(record_dir) if record_dir is not None else None
        self._events: queue.SimpleQueue[_Event] = queue.SimpleQueue()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever,
                                        name="maple-env-loop", daemon=True)
        self._thread.start()
        common = dict(battle_format=battle_format, server_configuration=server_configuration,
                      max_concurrent_battles=1, loop=self._loop, team=team,
                      log_level=log_level)
        self.agent = _DrivenPlayer(
            "agent", self._events, record=self.record_dir is not None,
            account_configuration=AccountConfiguration(unique_username("a"), None), **common)
        self.rival = _DrivenPlayer(
            "rival", self._events,
            account_configuration=AccountConfiguration(unique_username("b"), None), **common)
        self.battle: Battle | None = None
        self.rival_battle: Battle | None = None
        self._agent_reply: asyncio.Future | None = None  # the agent's pending decision
        self._stale_tags: set[str] = set()  # battles of earlier resets
        self._challenge: Any = None
        self._closed = False
        self.agent.connect()
        self.rival.connect()

    @property
    def connected(self) -> bool:
        return not (self.agent.listener.done() or self.rival.listener.done())

    # -- events
    def _next_event(self, timeout: float | None = None) -> _Event:
        timeout = self.timeout if timeout is None else timeout
        try:
            event = self._events.get(timeout=timeout)
        except queue.Empty:
            raise BattleAborted(f"no reply from {self.server_configuration.websocket_url} "
                                f"within {timeout:.0f} s") from None
        if event.item is _CLOSED:
            raise BattleAborted(
                f"connection to {self.server_configuration.websocket_url} closed")
        if event.role == "challenge":
            raise BattleAborted(f"challenge failed: {event.item!r}")
        return event

    def _is_stale(self, event: _Event) -> bool:
        """An event of an earlier battle; its decision (if any) is answered with nothing."""
        if event.item.battle_tag not in self._stale_tags:
            return False
        if event.reply is not None:
            (self.agent if event.role == "agent" else self.rival).answer(event.reply, _NoOrder())
        return True

    def _on_rival_event(self, event: _Event, ending: bool = False) -> None:
        """Track the opponent's seat; answer its decisions with the opponent's order
        (with nothing while its battle is being ended)."""
        if self._is_stale(event):
            return
        battle = event.item
        if self.rival_battle is None:
            self.rival_battle = battle
            self.opponent._battles[battle.battle_tag] = battle
        if event.reply is None:
            return
        if ending or battle.finished:
            self.rival.answer(event.reply, _NoOrder())
            return
        order = self.opponent.choose_move(battle)
        if inspect.isawaitable(order):
            self.rival.answer(event.reply, _NoOrder())
            raise TypeError(f"opponent {type(self.opponent).__name__}.choose_move returned "
                            "an awaitable; opponents must choose synchronously")
        self.rival.answer(event.reply, order)

    def _advance(self) -> Battle:
        """Answer the opponent's requests until the agent must act or its battle ends."""
        while True:
            event = self._next_event()
            if event.role == "rival":
                self._on_rival_event(event)
                continue
            if self._is_stale(event):
                continue
            battle = event.item
            self.battle = battle
            self._agent_reply = event.reply
            if battle.finished:
                self._save_record(battle)
            return battle

    def _finish_battle(self) -> None:
        """Forfeit an unfinished battle and wait until both seats saw its end."""
        agent = self.battle
        if agent is not None and not agent.finished:
            if self._agent_reply is None:
                raise BattleAborted("battle in progress but the agent has no decision")
            self.agent.answer(self._agent_reply, ForfeitBattleOrder())
            self._agent_reply = None
        deadline = time.monotonic() + self.timeout

        def ended(battle: Battle | None) -> bool:
            return battle is None or battle.finished

        while not (ended(agent) and ended(self.rival_battle)):
            event = self._next_event(max(deadline - time.monotonic(), 0.0))
            if event.role == "rival":
                self._on_rival_event(event, ending=True)
            elif self._is_stale(event):
                continue
            elif event.reply is not None:
                self.agent.answer(event.reply, _NoOrder())
        if agent is not None:
            self._save_record(agent)  # no-op if already saved

    def _drain(self) -> None:
        """Answer leftover events of ended battles (a lost connection still raises)."""
        while True:
            try:
                event = self._events.get_nowait()
            except queue.Empty:
                return
            if event.item is _CLOSED or event.role == "challenge":
                self._events.put(event)
                self._next_event()  # raises BattleAborted
            if event.reply is not None:
                player = self.agent if event.role == "agent" else self.rival
                player.answer(event.reply, _NoOrder())

    # -- backend API
    def reset(self, seed: int | None = None) -> Battle:
        """Start the next battle (``seed`` is ignored: the server picks the teams)."""
        if self._closed:
            raise RuntimeError("backend is closed")
        if not self.connected:
            raise BattleAborted(f"not connected to {self.server_configuration.websocket_url}")
        self._finish_battle()
        self._drain()
        if self._challenge is not None and self._challenge.done() and \
                self._challenge.exception() is not None:
            raise BattleAborted(f"challenge failed: {self._challenge.exception()!r}")
        for player in (self.agent, self.rival):
            player.reset_battles()
        if self.rival_battle is not None:  # the opponent may be shared: drop only ours
            self.opponent._battles.pop(self.rival_battle.battle_tag, None)
        self._stale_tags = {b.battle_tag for b in (self.battle, self.rival_battle) if b}
        self.battle = self.rival_battle = None
        if self.agent.frames is not None:
            self.agent.frames.clear()
        self._challenge = asyncio.run_coroutine_threadsafe(
            self.agent.battle_against(self.rival, n_battles=1), self._loop)
        self._challenge.add_done_callback(self._on_challenge_done)
        return self._advance()

    def _on_challenge_done(self, future: Any) -> None:
        if not future.cancelled() and future.exception() is not None:
            self._events.put(_Event("challenge", future.exception()))

    def step(self, order: BattleOrder) -> Battle:
        if self._agent_reply is None:
            raise RuntimeError("the agent has no pending decision; call reset()")
        reply, self._agent_reply = self._agent_reply, None
        self.agent.answer(reply, order)
        return self._advance()

    def close(self) -> None:
        """Forfeit a running battle, close both websockets and stop the loop thread."""
        if self._closed:
            return
        self._closed = True
        if self._loop.is_running():
            future = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
            with contextlib.suppress(Exception):
                future.result(timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self._loop.close()

    async def _shutdown(self) -> None:
        battle = self.battle
        if battle is not None and not battle.finished and self.connected:
            if self._agent_reply is not None and not self._agent_reply.done():
                self._agent_reply.set_result(ForfeitBattleOrder())
                self._agent_reply = None
            else:
                with contextlib.suppress(Exception):
                    await self.agent.ps_client.send_message("/forfeit", battle.battle_tag)
        # Let message handlers (the forfeit, the /leave after a win) finish first.
        current = asyncio.current_task()
        listeners = {self.agent.listener_task, self.rival.listener_task}
        others = [t for t in asyncio.all_tasks() if t is not current and t not in listeners]
        if others and self.connected:
            await asyncio.wait(others, timeout=3)
        for player in (self.agent, self.rival):
            websocket = getattr(player.ps_client, "websocket", None)
            if websocket is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(websocket.close(), 5)
            # poke-env logs every cancelled message handler as CRITICAL.
            player.logger.setLevel(logging.CRITICAL + 1)
        tasks = [t for t in asyncio.all_tasks() if t is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _save_record(self, battle: Battle) -> None:
        if self.record_dir is None or not self.agent.frames:
            return
        self.record_dir.mkdir(parents=True, exist_ok=True)
        path = self.record_dir / f"{battle.battle_tag}.jsonl"
        room = f">{battle.battle_tag}\n"
        frames = [f for f in self.agent.frames if f.startswith(room)]
        path.write_text("".join(json.dumps(frame) + "\n" for frame in frames))
        self.agent.frames.clear()


def wait_for_server(configuration: ServerConfiguration, timeout: float) -> None:
    """Wait until the server's TCP port accepts connections (``ShowdownError`` if not)."""
    parts = urlsplit(configuration.websocket_url)
    host = parts.hostname or "127.0.0.1"
    port = parts.port or (443 if parts.scheme == "wss" else 80)
    deadline = time.monotonic() + timeout
    while not port_is_open(port, host):
        if time.monotonic() > deadline:
            raise ShowdownError(f"Showdown server {host}:{port} is unreachable "
                                f"(waited {timeout:.0f} s)")
        time.sleep(0.2)


# ------------------------------------------------------------------------------- env


class PokemonEnv(gymnasium.Env):
    """Singles battles against a fixed opponent; one battle per episode.

    Args:
        battle_format: a singles Showdown format (``gen9randombattle``...).
        opponent: an opponent name (:func:`mapleenv.opponents.make_opponent`) or a
            non-listening poke-env ``Player``.
        server: ``None`` starts an embedded :class:`ShowdownServer` (stopped by
            :meth:`close`); or a ``ShowdownServer``, a poke-env
            ``ServerConfiguration``, or ``"host:port"`` / ``ws://...``.
        encoder: encoder name or instance (:mod:`mapleenv.encoding`).
        reward: :class:`RewardConfig`, a mapping of its fields, or ``None``.
        log_dir: where an embedded server keeps its directory and log.
        max_turns: truncate the episode once the battle reaches this turn.
        seed: seed of the first ``reset`` (Showdown's team generation and the
            baseline opponents are not seeded by the websocket backend).
        backend: ``"server"`` or a name given to :func:`register_backend`.
        backend_kwargs: extra arguments of a registered backend's factory.
        timeout: longest wait for the server during one step (s).
        reconnect_timeout: how long ``reset`` waits for a non-embedded server to come
            back after its connection was lost (s).
        team: team for formats that need one (poke-env ``team`` argument).
        plugins: modules imported first (they may register encoders, opponents,
            backends in the process that builds the env).
        record_dir: write each battle's agent-side websocket frames there (JSONL).
        replay_dir: write each finished battle's poke-env HTML replay there.
        teacher: an opponent name (e.g. ``"heuristic"``) whose choice for the agent's own
            decision is added to every observation as ``teacher_action`` (int64 ``[1]``,
            the action index, ``-1`` if its order is not a legal action): the target of
            the trainer's kickstarting loss (``algo.kickstart_coef``).

    ``info`` at the end of an episode holds ``won`` (False for a loss, a tie or a
    max_turns truncation), ``battle_tag``, ``turns`` and ``opponent`` (its name; a
    mix names the one it drew, see :mod:`mapleenv.opponent_mix`); an aborted battle (server
    lost, timeout) ends with ``truncated=True`` and ``info["aborted"]`` (and no
    ``won``), and the next ``reset`` reconnects.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, battle_format: str = "gen9randombattle",
                 opponent: str | Player = "random",
                 server: ServerConfiguration | ShowdownServer | str | None = None,
                 encoder: str | BattleEncoder = "simple",
                 reward: RewardConfig | Mapping[str, Any] | None = None,
                 log_dir: str | Path | None = None, max_turns: int | None = None,
                 seed: int | None = None, *, backend: str = "server",
                 backend_kwargs: Mapping[str, Any] | None = None, timeout: float = 60.0,
                 reconnect_timeout: float = 60.0, team: Any = None,
                 plugins: Iterable[str] = (), record_dir: str | Path | None = None,
                 replay_dir: str | Path | None = None, teacher: str | None = None):
        for module in plugins:
            importlib.import_module(module)
        fmt = battle_format.lower()
        if "double" in fmt or "vgc" in fmt or "multi" in fmt:
            raise ValueError(f"{battle_format!r}: only singles formats are supported")
        try:
            self.gen = GenData.from_format(battle_format).gen
        except Exception as exc:
            raise ValueError(f"bad battle_format {battle_format!r}: {exc}") from exc
        if max_turns is not None and max_turns < 1:
            raise ValueError(f"max_turns must be >= 1 or None, got {max_turns}")
        self.battle_format = battle_format
        self.max_turns = max_turns
        self.timeout = timeout
        self.reconnect_timeout = reconnect_timeout
        self.team = team
        self.record_dir = record_dir
        self.replay_dir = replay_dir
        self.encoder = make_encoder(encoder)
        self.reward_tracker = RewardTracker(reward)
        self.opponent = (opponent if isinstance(opponent, Player)
                         else make_opponent(opponent, battle_format=battle_format, seed=seed))
        self.opponent_name = opponent if isinstance(opponent, str) else type(opponent).__name__
        self.action_space = spaces.Discrete(action_space_size(self.gen))
        n_actions = int(self.action_space.n)
        obs_spaces: dict[str, spaces.Space] = {
            "observation": observation_box(self.encoder),
            "action_mask": spaces.Box(0, 1, (n_actions,), dtype=np.int8),
        }
        self.teacher = (None if teacher is None
                        else make_opponent(teacher, battle_format=battle_format, seed=seed))
        if self.teacher is not None:
            obs_spaces["teacher_action"] = spaces.Box(-1, n_actions - 1, (1,), dtype=np.int64)
        self.observation_space = spaces.Dict(obs_spaces)
        self.backend_name = backend
        self.backend_kwargs = dict(backend_kwargs or {})
        self.log_dir = log_dir
        self.server: ShowdownServer | None = None
        self._owns_server = False
        self._server_configuration: ServerConfiguration | None = None
        if backend == "server":
            if server is None:
                self.server = ShowdownServer(log_dir=log_dir)
                self._owns_server = True
            elif isinstance(server, ShowdownServer):
                self.server = server
            elif isinstance(server, str):
                self._server_configuration = external_server(server)
            elif isinstance(server, ServerConfiguration):
                self._server_configuration = server
            else:
                raise TypeError(f"server must be None, a ShowdownServer, a "
                                f"ServerConfiguration or a URL, not {server!r}")
        elif not backend_available(backend):
            raise NotImplementedError(
                f"backend {backend!r} is not available (registered: "
                f"{', '.join(['server', *sorted(BACKENDS)])}); see register_backend")
        self._backend: BattleBackend | None = None
        self._battle: Battle | None = None
        self._legal: dict[int, BattleOrder] = {}
        self._last_obs: dict[str, np.ndarray] | None = None
        self._episode_over = True
        self._seed = seed
        self._closed = False

    # -- backend management
    def _server_config(self) -> ServerConfiguration:
        if self.server is not None:
            if self.server.ensure_running() and not self._owns_server:
                logger.warning("restarted %r", self.server)
            return self.server.server_configuration
        assert self._server_configuration is not None
        wait_for_server(self._server_configuration, self.reconnect_timeout)
        return self._server_configuration

    def _make_backend(self, seed: int | None) -> BattleBackend:
        if self.backend_name == "server":
            return ShowdownBackend(self._server_config(), self.battle_format, self.opponent,
                                   team=self.team, timeout=self.timeout,
                                   record_dir=self.record_dir)
        return BACKENDS[self.backend_name](battle_format=self.battle_format,
                                           opponent=self.opponent, seed=seed,
                                           log_dir=self.log_dir, team=self.team,
                                           **self.backend_kwargs)

    def _drop_backend(self) -> None:
        backend, self._backend = self._backend, None
        if backend is not None:
            with contextlib.suppress(Exception):
                backend.close()

    # -- observation
    def _observe(self, battle: Battle) -> dict[str, np.ndarray]:
        self._legal = legal_actions(battle)
        obs = self.encoder.encode(battle)
        np.clip(obs, self.observation_space["observation"].low,
                self.observation_space["observation"].high, out=obs)
        self._last_obs = {"observation": obs,
                          "action_mask": mask_from_legal(self._legal, int(self.action_space.n))}
        if self.teacher is not None:
            self._last_obs["teacher_action"] = np.array([self._teacher_action(battle)])
        return self._last_obs

    def _teacher_action(self, battle: Battle) -> int:
        """The teacher's choice for this decision as a legal action index (-1: none)."""
        if battle.finished:
            return -1
        message = self.teacher.choose_move(battle).message
        return next((a for a, order in self._legal.items() if order.message == message), -1)

    @property
    def battle(self) -> Battle | None:
        """The agent's current (or last) battle."""
        return self._battle

    @property
    def legal_orders(self) -> dict[int, BattleOrder]:
        """Legal action -> order for the current decision."""
        return dict(self._legal)

    # -- Gymnasium API
    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray], dict]:
        if self._closed:
            raise RuntimeError("env is closed")
        if seed is None and self._seed is not None:
            seed, self._seed = self._seed, None
        super().reset(seed=seed)
        if self.server is not None and not self.server.is_alive():
            self._drop_backend()
        attempts = 3
        for attempt in range(1, attempts + 1):
            try:
                if self._backend is None:
                    self._backend = self._make_backend(seed)
                battle = self._backend.reset(seed=seed)
                break
            except BattleAborted as exc:
                self._drop_backend()
                if attempt == attempts:
                    raise ShowdownError(f"could not start a battle after {attempts} "
                                        f"attempts: {exc}") from exc
                logger.warning("reset: %s; reconnecting (attempt %d/%d)", exc, attempt + 1,
                               attempts)
        self._battle = battle
        self._episode_over = battle.finished
        self.reward_tracker.reset()
        return self._observe(battle), {"battle_tag": battle.battle_tag}

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        if self._battle is None or self._episode_over or self._backend is None:
            raise RuntimeError("no battle in progress: call reset()")
        order = self._legal.get(int(action))
        if order is None:
            raise ValueError(
                f"illegal action {action!r} in {self._battle.battle_tag} (turn "
                f"{self._battle.turn}); legal: {describe_legal(self._legal)}")
        try:
            battle = self._backend.step(order)
        except BattleAborted as exc:
            logger.warning("%s aborted: %s", self._battle.battle_tag, exc)
            self._drop_backend()
            self._episode_over = True
            assert self._last_obs is not None
            return self._last_obs, 0.0, False, True, {
                "battle_tag": self._battle.battle_tag, "turns": self._battle.turn,
                "aborted": str(exc)}
        self._battle = battle
        obs = self._observe(battle)
        reward = self.reward_tracker.compute(battle)
        terminated = battle.finished
        truncated = (not terminated and self.max_turns is not None
                     and battle.turn >= self.max_turns)
        info: dict[str, Any] = {}
        if terminated or truncated:
            self._episode_over = True
            info = {"won": bool(battle.won), "battle_tag": battle.battle_tag,
                    "turns": battle.turn, "opponent": self.opponent_label(battle.battle_tag)}
            if self.replay_dir is not None:
                battle.save_replay(Path(self.replay_dir) / f"{battle.battle_tag}.html")
        return obs, float(reward), terminated, truncated, info

    def opponent_label(self, battle_tag: str) -> str:
        """Name of the opponent of ``battle_tag`` (a mix names the one it drew)."""
        name_for = getattr(self.opponent, "name_for", None)
        return name_for(battle_tag) if callable(name_for) else self.opponent_name

    def call_opponent(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call the opponent's ``method``: ``envs.call("call_opponent", ...)`` reaches the
        opponents in vector-env workers (e.g. to push self-play snapshots)."""
        return getattr(self.opponent, method)(*args, **kwargs)

    def close(self) -> None:
        """Stop the battle, the connection and an embedded server; idempotent."""
        if self._closed:
            return
        self._closed = True
        self._drop_backend()
        if self._owns_server and self.server is not None:
            self.server.stop()
