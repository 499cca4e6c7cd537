"""``PokemonEnv``: one singles battle per episode against a named opponent, as a Gymnasium env.

The env turns battles into Gymnasium steps (the encoder, the exact action mask of
:mod:`mapleenv.actions`, the reward tracker, the opponent, truncation and ``info``); a
backend (:mod:`mapleenv.backends`) produces the battles. Every observation is a real
decision: "wait" requests and opponent-only decisions (e.g. the opponent's forced switch)
are played through inside a step.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from poke_env.battle.battle import Battle
from poke_env.data import GenData
from poke_env.player.battle_order import BattleOrder, DefaultBattleOrder
from poke_env.player.player import Player
from poke_env.ps_client.server_configuration import ServerConfiguration

from mapleenv.actions import action_space_size, describe_legal, legal_actions, mask_from_legal
from mapleenv.backends import (
    BACKENDS,
    BattleAborted,
    BattleBackend,
    available_backends,
    backend_available,
)
from mapleenv.backends.websocket import ShowdownBackend, wait_for_server
from mapleenv.encoders import BattleEncoder, make_encoder, observation_box
from mapleenv.opponents import make_opponent
from mapleenv.plugins import import_plugins
from mapleenv.replays import save_replay
from mapleenv.reward import RewardConfig, RewardFn, make_reward
from mapleenv.showdown.formats import check_format
from mapleenv.showdown.package import ShowdownError, external_server
from mapleenv.showdown.server import ShowdownServer
from mapleenv.showdown.teams import TeamPool, team_pool

logger = logging.getLogger(__name__)

__all__ = ["BattleAborted", "PokemonEnv"]

ON_ILLEGAL = ("default", "raise")
"""Values of ``PokemonEnv(on_illegal=...)``."""


class PokemonEnv(gymnasium.Env):
    """Singles battles against a fixed opponent; one battle per episode.

    Args:
        battle_format: a singles Showdown format (``gen9randombattle``...).
        opponent: an opponent name (:func:`mapleenv.opponents.make_opponent`) or a
            non-listening poke-env ``Player``.
        server: ``None`` starts an embedded :class:`ShowdownServer` (stopped by
            :meth:`close`); or a ``ShowdownServer``, a poke-env
            ``ServerConfiguration``, or ``"host:port"`` / ``ws://...``.
        encoder: encoder name or instance (:mod:`mapleenv.encoders`).
        reward: the reward weights: :class:`RewardConfig`, a mapping of its fields, or
            ``None``.
        reward_fn: the reward (:mod:`mapleenv.reward`): ``"shaped"`` (the weighted
            reward), a name given to :func:`~mapleenv.reward.register_reward`,
            ``"module:factory"``, or a :class:`~mapleenv.reward.RewardFn`.
        log_dir: where an embedded server keeps its directory and log.
        max_turns: truncate the episode once the battle reaches this turn.
        seed: seed of the first ``reset`` (Showdown's team generation and the
            baseline opponents are not seeded by the websocket backend).
        backend: ``"server"`` or a name given to :func:`register_backend`.
        backend_kwargs: extra arguments of a registered backend's factory.
        timeout: longest wait for the server during one step (s).
        reconnect_timeout: how long ``reset`` waits for a non-embedded server to come
            back after its connection was lost (s).
        team: the agent's team for formats that need one: a team file or folder (one
            team drawn per battle, seeded by ``seed``), team text (export or packed),
            loaded ``Team`` objects or a poke-env ``Teambuilder``; files and text are checked
            with the simulator's validator (:mod:`mapleenv.showdown.teams`).
        opponent_team: the opponent's team, the same kinds (default: ``team``).
        plugins: modules imported first (they may register encoders, opponents,
            rewards, backends in the process that builds the env; ``docs/extending.md``).
        record_dir: write each battle's agent-side websocket frames there (JSONL).
        replay_dir: write each finished battle's HTML replay there
            (:mod:`mapleenv.replays`).
        teacher: an opponent name (e.g. ``"heuristic"``) whose choice for the agent's own
            decision is added to every observation as ``teacher_action`` (int64 ``[1]``,
            the action index, ``-1`` if its order is not a legal action): the target of
            the trainer's kickstarting loss (``algo.kickstart_coef``).
        on_illegal: what ``step`` does with an action the mask rules out: ``"default"``
            plays the simulator's default choice and sets ``info["illegal_action"]``
            (so generic checkers and unmasked learners run); ``"raise"`` raises
            ``ValueError`` (Maple's trainer and evaluator use it: they only send legal
            actions, so one is a bug). docs/rl_libraries.md.

    ``info`` at the end of an episode holds ``won`` (False for a loss, a tie or a
    max_turns truncation), ``battle_tag``, ``turns`` and ``opponent`` (its name; a
    mix names the one it drew, see :mod:`mapleenv.opponents.mix`), and
    ``opponent_policy_id`` when a frozen policy from a self-play pool played; an aborted
    battle (server lost, timeout) ends with ``truncated=True`` and ``info["aborted"]`` (and no
    ``won``), and the next ``reset`` reconnects.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        battle_format: str = "gen9randombattle",
        opponent: str | Player = "random",
        server: ServerConfiguration | ShowdownServer | str | None = None,
        encoder: str | BattleEncoder = "simple",
        reward: RewardConfig | Mapping[str, Any] | None = None,
        log_dir: str | Path | None = None,
        max_turns: int | None = None,
        seed: int | None = None,
        *,
        backend: str = "server",
        backend_kwargs: Mapping[str, Any] | None = None,
        timeout: float = 60.0,
        reconnect_timeout: float = 60.0,
        team: Any = None,
        opponent_team: Any = None,
        plugins: Iterable[str] = (),
        record_dir: str | Path | None = None,
        replay_dir: str | Path | None = None,
        teacher: str | None = None,
        reward_fn: str | RewardFn = "shaped",
        on_illegal: str = "default",
    ):
        if on_illegal not in ON_ILLEGAL:
            raise ValueError(f"on_illegal must be one of {ON_ILLEGAL}, got {on_illegal!r}")
        self.on_illegal = on_illegal
        import_plugins(plugins)
        fmt = battle_format.lower()
        if "double" in fmt or "vgc" in fmt or "multi" in fmt:
            raise ValueError(f"{battle_format!r}: only singles formats are supported")
        try:
            self.gen = GenData.from_format(battle_format).gen
        except Exception as exc:
            raise ValueError(f"bad battle_format {battle_format!r}: {exc}") from exc
        # Maple runs the pinned simulator itself (an external server may have formats
        # and rules of its own)
        own_simulator = backend == "direct" or server is None or isinstance(server, ShowdownServer)
        if own_simulator:
            check_format(battle_format, has_team=team is not None)
        if max_turns is not None and max_turns < 1:
            raise ValueError(f"max_turns must be >= 1 or None, got {max_turns}")
        self.battle_format = battle_format
        self.max_turns = max_turns
        self.timeout = timeout
        self.reconnect_timeout = reconnect_timeout
        self.team = team_pool(team, battle_format, seed=seed, key="team", validate=own_simulator)
        self.opponent_team = team_pool(
            team if opponent_team is None else opponent_team,
            battle_format,
            seed=seed,
            stream=1,  # its own stream of draws: not always the agent's team
            key="team" if opponent_team is None else "opponent_team",
            validate=own_simulator,
        )
        self.record_dir = record_dir
        self.replay_dir = replay_dir
        self.encoder = make_encoder(encoder)
        self.reward_tracker = make_reward(reward_fn, reward)
        self.opponent = (
            opponent
            if isinstance(opponent, Player)
            else make_opponent(opponent, battle_format=battle_format, seed=seed)
        )
        self.opponent_name = opponent if isinstance(opponent, str) else type(opponent).__name__
        self.action_space = spaces.Discrete(action_space_size(self.gen))
        n_actions = int(self.action_space.n)
        obs_spaces: dict[str, spaces.Space] = {
            "observation": observation_box(self.encoder),
            "action_mask": spaces.Box(0, 1, (n_actions,), dtype=np.int8),
        }
        self.teacher = (
            None
            if teacher is None
            else make_opponent(teacher, battle_format=battle_format, seed=seed)
        )
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
                raise TypeError(
                    f"server must be None, a ShowdownServer, a "
                    f"ServerConfiguration or a URL, not {server!r}"
                )
        elif not backend_available(backend):
            raise NotImplementedError(
                f"backend {backend!r} is not available (registered: "
                f"{', '.join(available_backends())}); see register_backend"
            )
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
            return ShowdownBackend(
                self._server_config(),
                self.battle_format,
                self.opponent,
                team=self.team,
                opponent_team=self.opponent_team,
                timeout=self.timeout,
                record_dir=self.record_dir,
            )
        return BACKENDS[self.backend_name](
            battle_format=self.battle_format,
            opponent=self.opponent,
            seed=seed,
            log_dir=self.log_dir,
            team=self.team,
            **({} if self.team is None else {"opponent_team": self.opponent_team}),
            **self.backend_kwargs,
        )

    def _drop_backend(self) -> None:
        backend, self._backend = self._backend, None
        if backend is not None:
            with contextlib.suppress(Exception):
                backend.close()

    # -- observation
    def _observe(self, battle: Battle) -> dict[str, np.ndarray]:
        self._legal = legal_actions(battle)
        obs = self.encoder.encode(battle)
        np.clip(
            obs,
            self.observation_space["observation"].low,
            self.observation_space["observation"].high,
            out=obs,
        )
        self._last_obs = {
            "observation": obs,
            "action_mask": mask_from_legal(self._legal, int(self.action_space.n)),
        }
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

    def action_masks(self) -> np.ndarray:
        """Bool ``[A]`` mask of the legal actions for the current observation (its
        ``action_mask``): the method sb3-contrib's ``MaskablePPO`` looks for."""
        if self._last_obs is None:
            raise RuntimeError("no observation yet: call reset()")
        return self._last_obs["action_mask"].astype(bool)

    # -- Gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict]:
        if self._closed:
            raise RuntimeError("env is closed")
        if seed is None and self._seed is not None:
            seed, self._seed = self._seed, None
        super().reset(seed=seed)
        if seed is not None:
            for pool in {id(p): p for p in (self.team, self.opponent_team)}.values():
                if isinstance(pool, TeamPool):
                    pool.seed(seed)
        if self.server is not None and not self.server.is_alive():
            self._drop_backend()
        battle = self._start_battle(seed)
        self._battle = battle
        self._episode_over = battle.finished
        self.reward_tracker.reset()
        return self._observe(battle), {"battle_tag": battle.battle_tag}

    def _start_battle(self, seed: int | None) -> Battle:
        """Start a battle, retrying with backoff (0.25 s doubling to 5 s) for up to
        ``reconnect_timeout`` seconds: a killed simulator host or server is being restarted
        by its watchdog meanwhile."""
        deadline = time.monotonic() + self.reconnect_timeout
        delay, attempt = 0.25, 0
        while True:
            attempt += 1
            try:
                if self._backend is None:
                    self._backend = self._make_backend(seed)
                return self._backend.reset(seed=seed)
            except BattleAborted as exc:
                self._drop_backend()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ShowdownError(
                        f"could not start a battle in {self.reconnect_timeout:.0f} s "
                        f"({attempt} attempts): {exc}"
                    ) from exc
                logger.warning("reset: %s; retrying in %.2f s (attempt %d)", exc, delay, attempt)
                time.sleep(min(delay, remaining))
                delay = min(2 * delay, 5.0)

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        if self._battle is None or self._episode_over or self._backend is None:
            raise RuntimeError("no battle in progress: call reset()")
        order = self._legal.get(int(action))
        illegal = order is None
        if illegal:
            if self.on_illegal == "raise":
                raise ValueError(
                    f"illegal action {action!r} in {self._battle.battle_tag} (turn "
                    f"{self._battle.turn}); legal: {describe_legal(self._legal)}"
                )
            order = DefaultBattleOrder()
        try:
            battle = self._backend.step(order)
        except BattleAborted as exc:
            logger.warning("%s aborted: %s", self._battle.battle_tag, exc)
            self._drop_backend()
            self._episode_over = True
            assert self._last_obs is not None
            info = {
                "battle_tag": self._battle.battle_tag,
                "turns": self._battle.turn,
                "aborted": str(exc),
            }
            if illegal:
                info["illegal_action"] = True
            return self._last_obs, 0.0, False, True, info
        self._battle = battle
        obs = self._observe(battle)
        reward = self.reward_tracker.compute(battle)
        terminated = battle.finished
        truncated = not terminated and self.max_turns is not None and battle.turn >= self.max_turns
        info: dict[str, Any] = {}
        if terminated or truncated:
            self._episode_over = True
            info = {
                "won": bool(battle.won),
                "battle_tag": battle.battle_tag,
                "turns": battle.turn,
                "opponent": self.opponent_label(battle.battle_tag),
            }
            policy_id_for = getattr(self.opponent, "policy_id_for", None)
            policy_id = policy_id_for(battle.battle_tag) if callable(policy_id_for) else None
            if policy_id is not None:  # a frozen policy played (self-play's promotion gate)
                info["opponent_policy_id"] = int(policy_id)
            if self.replay_dir is not None:
                save_replay(battle, Path(self.replay_dir) / f"{battle.battle_tag}.html")
        if illegal:
            info["illegal_action"] = True
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
