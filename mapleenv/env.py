"""``PokemonEnv``: one singles battle per episode against a named opponent, as a Gymnasium env.

The env turns battles into Gymnasium steps (the encoder, the exact action mask of
:mod:`mapleenv.actions`, the reward tracker, the opponent, truncation and ``info``); a
backend (:mod:`mapleenv.backends`) produces the battles. Every observation is a real
decision: "wait" requests and opponent-only decisions (e.g. the opponent's forced switch)
are played through inside a step.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from poke_env.battle.battle import Battle
from poke_env.data import GenData
from poke_env.player.battle_order import BattleOrder, DefaultBattleOrder
from poke_env.player.player import Player
from poke_env.ps_client.server_configuration import ServerConfiguration

from mapleenv.actions import action_space_size, describe_legal, mask_from_legal
from mapleenv.backends import BattleAborted, BattleBackend, backend_factory
from mapleenv.backends.websocket import ShowdownBackend
from mapleenv.encoders import check_game_type, make_encoder, observation_box, playable_actions
from mapleenv.opponent_action import CLASSES as OPPONENT_ACTION_CLASSES
from mapleenv.opponent_action import OpponentActionReader
from mapleenv.opponents import make_opponent
from mapleenv.opponents.search_teacher import SearchTeacher
from mapleenv.paths import printable
from mapleenv.plugins import import_plugins
from mapleenv.replays import decision, protocol_log, save_replay
from mapleenv.reward import make_reward
from mapleenv.showdown.formats import is_doubles_format
from mapleenv.showdown.package import ShowdownError, wait_for_server
from mapleenv.showdown.server import ShowdownServer
from mapleenv.showdown.teams import TeamPool, team_pool
from mapleenv.spec import ON_ILLEGAL, EnvSpec, spec_of

logger = logging.getLogger(__name__)
TURNS_PAST_SHOWDOWNS_LIMIT = 1001  # Showdown ends a battle at turn 1000 itself

__all__ = ["ON_ILLEGAL", "BattleAborted", "EnvSpec", "PokemonEnv"]


class PokemonEnv(gymnasium.Env):
    """Singles battles against a fixed opponent; one battle per episode.

    ``PokemonEnv(spec=EnvSpec(...))``, or the spec's settings as arguments:
    ``PokemonEnv(battle_format, opponent, server, encoder, reward, log_dir, max_turns,
    seed, *, backend=..., team=..., on_illegal=..., ...)`` (every field of
    :class:`mapleenv.spec.EnvSpec`, which documents them); ``spec=`` with settings
    replaces those in it. With no ``server`` and no ``backend``, battles run on the direct
    simulator backend (``$MAPLE_BACKEND`` overrides); ``backend="server"`` with no server
    starts an embedded local Showdown server, stopped by :meth:`close`; a given server
    implies ``backend="server"``. A spec that is already checked (as a vector env's
    workers get it) is not checked again: no format or team check per worker.

    ``info`` at the end of an episode holds ``won`` (False for a loss, a tie or a
    max_turns truncation), ``battle_tag``, ``turns``, ``player_role`` (the agent's side,
    ``p1``/``p2``) and ``opponent`` (its name; a mix names the one it drew, see
    :mod:`mapleenv.opponents.mix`), ``opponent_policy_id`` when a frozen policy from a
    self-play pool played, and with ``battle_log`` the battle's protocol lines; an aborted
    battle (server lost, timeout) ends with ``truncated=True`` and ``info["aborted"]`` (and no
    ``won``), and the next ``reset`` reconnects. With ``teacher``, every observation also
    holds ``teacher_action`` (int64 ``[1]``, the teacher's choice as an action index, -1 if
    not a legal action, or while :meth:`set_teacher_active` has the teacher off). With an
    enabled ``search_teacher``, every observation also holds ``teacher_probs`` (float32
    ``[A]``, the engine search's target at a searched decision, else zeros). With
    ``opponent_action_target``, every observation also holds ``opponent_action`` (int64
    ``[1]``, what the opponent did since the last decision, -1 unknown:
    :mod:`mapleenv.opponent_action`).
    ``on_illegal``: docs/rl_libraries.md.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, *args: Any, spec: EnvSpec | None = None, **settings: Any):
        spec = spec_of(spec, args, settings)
        self.env_spec = spec
        import_plugins(spec.plugins)  # registrations are per process (workers too)
        self.gen = GenData.from_format(spec.battle_format).gen
        self._build_players(spec)
        self._build_spaces()
        self._setup_server(spec)
        self._backend: BattleBackend | None = None
        self._battle: Battle | None = None
        self._battle_started = 0.0  # time.monotonic() when the running battle began
        self._decisions: list[dict[str, Any]] = []  # the agent's choices, for its replay
        # the policy's probability of the next action, when its caller sets it (evaluation
        # with replays: ``envs.set_attr``); the replay shows it beside the choice; used once
        self.choice_probability: float | None = None
        self._legal: dict[int, BattleOrder] = {}
        self._last_obs: dict[str, np.ndarray] | None = None
        self._episode_over = True
        self._seed = spec.seed
        self._closed = False

    def _build_players(self, spec: EnvSpec) -> None:
        """The encoder, reward, opponent, teacher and team pools of this env."""
        fmt, seed = spec.battle_format, spec.seed
        self.encoder = make_encoder(spec.encoder)
        check_game_type(self.encoder, str(spec.encoder), fmt)
        self.reward_tracker = make_reward(spec.reward_fn, spec.reward)
        opponent = spec.opponent
        self.opponent = (
            opponent
            if isinstance(opponent, Player)
            else make_opponent(opponent, battle_format=fmt, seed=seed)
        )
        self.opponent_name = opponent if isinstance(opponent, str) else type(opponent).__name__
        teacher = spec.teacher
        self.teacher = (
            None if teacher is None else make_opponent(teacher, battle_format=fmt, seed=seed)
        )
        self._teacher_active = self.teacher is not None
        self._teacher_calls = 0
        self.search_teacher = (
            SearchTeacher(spec.search_teacher, seed) if spec.search_teacher.enabled else None
        )
        self._opponent_actions = OpponentActionReader() if spec.opponent_action_target else None
        # the spec's teams are loaded; the opponent draws from its own stream
        self.team = team_pool(spec.team, fmt, seed=seed, validate=False)
        opponent_team = spec.team if spec.opponent_team is None else spec.opponent_team
        self.opponent_team = team_pool(opponent_team, fmt, seed=seed, stream=1, validate=False)

    def _build_spaces(self) -> None:
        doubles = is_doubles_format(self.env_spec.battle_format)
        self.action_space = spaces.Discrete(action_space_size(self.gen, doubles=doubles))
        n_actions = int(self.action_space.n)
        obs_spaces: dict[str, spaces.Space] = {
            "observation": observation_box(self.encoder),
            "action_mask": spaces.Box(0, 1, (n_actions,), dtype=np.int8),
        }
        if self.teacher is not None:
            obs_spaces["teacher_action"] = spaces.Box(-1, n_actions - 1, (1,), dtype=np.int64)
        if self.search_teacher is not None:
            obs_spaces["teacher_probs"] = spaces.Box(0, 1, (n_actions,), dtype=np.float32)
        if self._opponent_actions is not None:
            high = len(OPPONENT_ACTION_CLASSES) - 1
            obs_spaces["opponent_action"] = spaces.Box(-1, high, (1,), dtype=np.int64)
        self.observation_space = spaces.Dict(obs_spaces)

    def _setup_server(self, spec: EnvSpec) -> None:
        """The server backend's server: an embedded one (no server given), a managed
        ``ShowdownServer`` or an external configuration."""
        self.server: ShowdownServer | None = None
        self._owns_server = False
        self._server_configuration: ServerConfiguration | None = None
        if spec.backend != "server":
            return
        if spec.server is None:
            self.server = ShowdownServer(log_dir=spec.log_dir, config=dict(spec.server_config))
            self._owns_server = True
        elif isinstance(spec.server, ShowdownServer):
            self.server = spec.server
        else:
            self._server_configuration = spec.server

    # -- settings (the spec holds them)
    @property
    def battle_format(self) -> str:
        return self.env_spec.battle_format

    @property
    def max_turns(self) -> int | None:
        return self.env_spec.max_turns

    @property
    def on_illegal(self) -> str:
        return self.env_spec.on_illegal

    @property
    def backend_name(self) -> str:
        return str(self.env_spec.backend)

    # -- backend management
    def _server_config(self) -> ServerConfiguration:
        if self.server is not None:
            if self.server.ensure_running() and not self._owns_server:
                logger.warning("restarted %r", self.server)
            return self.server.server_configuration
        assert self._server_configuration is not None
        wait_for_server(self._server_configuration, self.env_spec.reconnect_timeout)
        return self._server_configuration

    def _make_backend(self, seed: int | None) -> BattleBackend:
        teams = {"team": self.team, "opponent_team": self.opponent_team}
        if self.backend_name == "server":
            return ShowdownBackend.from_spec(
                self.env_spec, self._server_config(), opponent=self.opponent, **teams
            )
        factory = backend_factory(self.backend_name)
        return factory(self.env_spec, opponent=self.opponent, seed=seed, **teams)

    def _drop_backend(self) -> None:
        backend, self._backend = self._backend, None
        if backend is not None:
            with contextlib.suppress(Exception):
                backend.close()

    # -- observation
    def _observe(self, battle: Battle, first: bool = False) -> dict[str, np.ndarray]:
        """The observation of ``battle``'s current decision (``first``: of the battle)."""
        self._legal = playable_actions(battle, self.env_spec.mask_futile)
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
        if self.search_teacher is not None:
            mask = self._last_obs["action_mask"]
            self._last_obs["teacher_probs"] = self.search_teacher.target(battle, mask)
        reader = self._opponent_actions
        if reader is not None:
            label = reader.reset(battle) if first else reader.read(battle)
            self._last_obs["opponent_action"] = np.array([label], dtype=np.int64)
        return self._last_obs

    def _teacher_action(self, battle: Battle) -> int:
        """The teacher's choice for this decision as a legal action index (-1: none, or the
        teacher is off)."""
        if battle.finished or not self._teacher_active:
            return -1
        self._teacher_calls += 1
        message = self.teacher.choose_move(battle).message
        return next((a for a, order in self._legal.items() if order.message == message), -1)

    def set_teacher_active(self, active: bool) -> bool:
        """Compute the teacher's choice from the next observation on (``True``) or not
        (``False``: ``teacher_action`` is -1, the space is unchanged): the trainer turns it off
        once kickstarting is over, through ``envs.call("set_teacher_active", False)``.
        Returns whether it is on now (always ``False`` without a teacher)."""
        self._teacher_active = bool(active) and self.teacher is not None
        return self._teacher_active

    def teacher_calls(self) -> int:
        """How many times this env asked its teacher for a choice (``envs.call``-able)."""
        return self._teacher_calls

    def search_teacher_stats(self) -> dict[str, Any]:
        """The search teacher's decisions, searched ones and search time (``envs.call``-able;
        empty without one)."""
        return {} if self.search_teacher is None else self.search_teacher.stats()

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
        self._battle, self._battle_started = battle, time.monotonic()
        self._episode_over = battle.finished
        self._decisions = []
        self.reward_tracker.reset()
        obs = self._observe(battle, first=True)
        return obs, self._decision_info(battle, {"battle_tag": battle.battle_tag})

    def _decision_info(self, battle: Battle, info: dict[str, Any]) -> dict[str, Any]:
        """``info`` plus ``search_view`` (JSON text: vector envs would split a dict into
        arrays) when the spec asks for it and a decision waits."""
        if self.env_spec.search_view and self._legal and not battle.finished:
            from mapleenv.search import readable_view

            view = readable_view(battle, self._legal)
            if view is not None:  # else the policy's own decision (warned once)
                info["search_view"] = json.dumps(view)
        return info

    def _start_battle(self, seed: int | None) -> Battle:
        """Start a battle, retrying with backoff (0.25 s doubling to 5 s) for up to
        ``reconnect_timeout`` seconds: a killed simulator host or server is being restarted
        by its watchdog meanwhile."""
        reconnect_timeout = self.env_spec.reconnect_timeout
        deadline = time.monotonic() + reconnect_timeout
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
                        f"could not start a battle in {reconnect_timeout:.0f} s "
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
        if self.env_spec.replay_dir is not None:
            choice = order.message.removeprefix("/choose ")
            self._decisions.append(decision(self._battle, choice, self.choice_probability))
        self.choice_probability = None
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
        truncated = not terminated and self._past_limits(battle)
        info: dict[str, Any] = {}
        if terminated or truncated:
            self._episode_over = True
            info = {
                "won": bool(battle.won),
                "battle_tag": battle.battle_tag,
                "turns": battle.turn,
                "opponent": self.opponent_label(battle.battle_tag),
                "player_role": battle.player_role,
            }
            if self.env_spec.battle_log:
                info["battle_log"] = protocol_log(battle)
            policy_id_for = getattr(self.opponent, "policy_id_for", None)
            policy_id = policy_id_for(battle.battle_tag) if callable(policy_id_for) else None
            if policy_id is not None:  # a frozen policy played (self-play's promotion gate)
                info["opponent_policy_id"] = int(policy_id)
            if self.env_spec.replay_dir is not None:
                self._save_replay(battle)
        if illegal:
            info["illegal_action"] = True
        if not (terminated or truncated):
            info = self._decision_info(battle, info)
        return obs, float(reward), terminated, truncated, info

    def _past_limits(self, battle: Battle) -> bool:
        """Whether the running ``battle`` ends here as truncated: at ``max_turns`` (without
        it, past Showdown's own limit: a server that does not end it) or once it has lasted
        ``battle_minutes`` (one warning: a server that sends its turns slowly)."""
        limit = self.max_turns if self.max_turns is not None else TURNS_PAST_SHOWDOWNS_LIMIT
        if battle.turn >= limit:
            return True
        minutes = self.env_spec.battle_minutes
        if minutes is None or time.monotonic() - self._battle_started < 60.0 * minutes:
            return False
        logger.warning(
            "battle %s: truncated, still going after %g min (battle_minutes)",
            printable(battle.battle_tag),
            minutes,
        )
        return True

    def _save_replay(self, battle: Battle) -> None:
        """The battle's replay file; one that cannot be made or written (a server's text
        the writer cannot read, a full disk) is one warning: the battle's result stands."""
        try:
            save_replay(battle, self.env_spec.replay_dir, self._decisions)
        except Exception as exc:
            logger.warning(
                "replay of %s not written: %s: %s",
                printable(battle.battle_tag),
                type(exc).__name__,
                printable(exc),
            )

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
        if self.search_teacher is not None:
            self.search_teacher.close()
        if self._owns_server and self.server is not None:
            self.server.stop()
