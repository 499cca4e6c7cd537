"""``ShowdownParallelEnv``: one singles or doubles battle with both seats as PettingZoo agents.

``mapleenv.parallel_env(...)`` builds it. Agents ``"p1"`` and ``"p2"`` each see the battle
from their side with :class:`~mapleenv.env.PokemonEnv`'s encoder, action space, exact mask
and reward; the battle runs on the direct backend (a Node simulator host, no server).
Every step returns an observation for both agents; an agent with no decision to make (the
other side's forced switch) gets the mask with action 0 only, ``info["needs_action"] =
False``, and its action is ignored. A doubles format plays ``DoubleBattle``s with the joint
action space of :mod:`mapleenv.actions.doubles` and a doubles encoder (the default there).
docs/multiagent.md has the whole convention.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from poke_env.battle.abstract_battle import AbstractBattle
from poke_env.data import GenData
from poke_env.player.battle_order import BattleOrder, DefaultBattleOrder

from mapleenv.actions import action_space_size, describe_legal, mask_from_legal
from mapleenv.backends.direct.host import SimHost, SimHostError
from mapleenv.backends.direct.session import SIDES, DirectBattle
from mapleenv.encoders import (
    BattleEncoder,
    check_game_type,
    default_encoder,
    make_encoder,
    observation_box,
    playable_actions,
)
from mapleenv.reward import RewardConfig, RewardTracker
from mapleenv.showdown.formats import check_format, is_doubles_format
from mapleenv.showdown.teams import TeamPool, team_pool

logger = logging.getLogger(__name__)

__all__ = ["ShowdownParallelEnv", "parallel_env"]

_SEED_MAX = 1 << 16  # the simulator's PRNG seed is four 16-bit words


class ShowdownParallelEnv(ParallelEnv):
    """Both seats of one battle per episode, as a PettingZoo ``ParallelEnv``.

    Args:
        battle_format: a singles or doubles Showdown format (``gen9randombattle``,
            ``gen9randomdoublesbattle``, ``gen9vgc2025regi``...).
        encoder: encoder name or instance (:mod:`mapleenv.encoders`), both agents; it must
            read the format's battles; ``None``: the format's (``"singles_basic"`` for
            singles, ``"doubles_basic"`` for doubles).
        reward: :class:`RewardConfig` (or a mapping of its fields) for both agents.
        max_turns: truncate the episode once the battle reaches this turn.
        seed: seed of the first ``reset``; ``reset(seed=s)`` draws the battle's simulator
            and team seeds from ``numpy.random.default_rng(s)``, so the same seed and the
            same actions replay the same battle.
        team: team for formats that need one (both seats): a team file or folder (one of
            its teams drawn per seat and battle from the seeded stream), team text,
            ``Team`` objects or a poke-env ``Teambuilder``;
            validated for ``battle_format`` as :class:`~mapleenv.env.PokemonEnv` does.
        on_illegal: ``"default"`` plays the simulator's default choice for a masked-out
            action and sets that agent's ``info["illegal_action"]``; ``"raise"`` raises
            ``ValueError``.
        mask_futile: both masks also drop the moves that surely fail, as
            :class:`~mapleenv.env.PokemonEnv`'s ``mask_futile`` does.
        usernames: the two players' names in the battle log.
        showdown_dir: the pokemon-showdown npm package (default: ``find_showdown()``).
        timeout: longest wait for the simulator host (s).
    """

    metadata: dict[str, Any] = {"name": "maple_showdown_v0", "render_modes": []}

    def __init__(
        self,
        battle_format: str = "gen9randombattle",
        encoder: str | BattleEncoder | None = None,
        reward: RewardConfig | Mapping[str, Any] | None = None,
        max_turns: int | None = None,
        seed: int | None = None,
        *,
        team: Any = None,
        on_illegal: str = "default",
        mask_futile: bool = False,
        usernames: tuple[str, str] = ("Maple 1", "Maple 2"),
        showdown_dir: str | Path | None = None,
        timeout: float = 120.0,
    ):
        try:
            gen = GenData.from_format(battle_format).gen
        except Exception as exc:
            raise ValueError(f"bad battle_format {battle_format!r}: {exc}") from exc
        check_format(battle_format, has_team=team is not None)
        if max_turns is not None and max_turns < 1:
            raise ValueError(f"max_turns must be >= 1 or None, got {max_turns}")
        if on_illegal not in ("default", "raise"):
            raise ValueError(f"on_illegal must be one of ('default', 'raise'), got {on_illegal!r}")
        if len(usernames) != 2 or usernames[0] == usernames[1]:
            raise ValueError(f"usernames must be two different names, got {usernames!r}")
        self.battle_format = battle_format
        self.max_turns = max_turns
        self.on_illegal = on_illegal
        self.mask_futile = mask_futile
        self.usernames = dict(zip(SIDES, usernames, strict=True))
        self.showdown_dir = showdown_dir
        self.timeout = timeout
        if encoder is None:  # the format's own (simple for singles, doubles for doubles)
            encoder = default_encoder(battle_format)
        self.encoder = make_encoder(encoder)
        doubles = is_doubles_format(battle_format)
        name = encoder if isinstance(encoder, str) else type(encoder).__name__
        check_game_type(self.encoder, name, battle_format)
        self.reward_config = RewardConfig.from_value(reward)
        self._trackers = {side: RewardTracker(self.reward_config) for side in SIDES}
        self._teams = team_pool(team, battle_format)
        self.possible_agents = list(SIDES)
        self.agents: list[str] = []
        n_actions = action_space_size(gen, doubles=doubles)
        self.observation_spaces = {
            side: spaces.Dict(
                {
                    "observation": observation_box(self.encoder),
                    "action_mask": spaces.Box(0, 1, (n_actions,), dtype=np.int8),
                }
            )
            for side in SIDES
        }
        self.action_spaces = {side: spaces.Discrete(n_actions) for side in SIDES}
        self._rng = np.random.default_rng(seed)
        self._ids = itertools.count()
        self._prefix = f"{os.getpid()}x{self._rng.integers(1 << 30)}pz"
        self._host: SimHost | None = None
        self._session: DirectBattle | None = None
        self._legal: dict[str, dict[int, BattleOrder]] = {side: {} for side in SIDES}
        self._last_obs: dict[str, dict[str, np.ndarray]] = {}

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    @property
    def battles(self) -> dict[str, AbstractBattle]:
        """Each agent's view of the current (or last) battle."""
        return dict(self._session.battles) if self._session is not None else {}

    def action_masks(self, agent: str) -> np.ndarray:
        """Bool ``[A]`` mask of ``agent``'s current observation."""
        if agent not in self._last_obs:
            raise RuntimeError("no observation yet: call reset()")
        return self._last_obs[agent]["action_mask"].astype(bool)

    # -- PettingZoo API
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, dict[str, Any]]]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._end_session()
        if self._host is None or not self._host.alive():
            self._drop_host()
            self._host = SimHost(self.showdown_dir, timeout=self.timeout)
        session = DirectBattle(
            self._host,
            f"{self._prefix}-{next(self._ids)}",
            self.battle_format,
            None,
            agent_username=self.usernames["p1"],
            opponent_username=self.usernames["p2"],
            seed=self._draw_seed(),
            team_seeds={"p1": self._draw_seed(), "p2": self._draw_seed()},
            agent_team=self._draw_team(),
            opponent_team=self._draw_team(),
        )
        self._session = session
        session.start()  # a SimHostError here is the caller's to see: no battle to truncate
        self.agents = list(self.possible_agents)
        for tracker in self._trackers.values():
            tracker.reset()
        observations = self._observe()
        return observations, {side: self._info(side) for side in SIDES}

    def step(self, actions: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        session = self._session
        if session is None or not self.agents:
            raise RuntimeError("no battle in progress: call reset()")
        choices: dict[str, BattleOrder] = {}
        illegal: set[str] = set()
        for side in session.pending:
            if side not in actions:
                raise ValueError(f"{session.battle_tag}: agent {side} must act (no action)")
            choices[side] = self._order(side, actions[side], illegal)
        try:
            session.choose(choices)
        except SimHostError as exc:  # the host died: end the episode, the next reset restarts it
            logger.warning("%s aborted: %s", session.battle_tag, exc)
            self._drop_host()
            self.agents = []
            turns = session.battles["p1"].turn
            infos = {
                side: {"battle_tag": session.battle_tag, "needs_action": False, "turns": turns}
                for side in SIDES
            }
            for side in SIDES:
                infos[side]["aborted"] = str(exc)
                if side in illegal:
                    infos[side]["illegal_action"] = True
            observations = {side: dict(obs) for side, obs in self._last_obs.items()}
            zeros = dict.fromkeys(SIDES, 0.0)
            return (
                observations,
                zeros,
                dict.fromkeys(SIDES, False),
                dict.fromkeys(SIDES, True),
                infos,
            )
        observations = self._observe()
        rewards = {
            side: float(self._trackers[side].compute(session.battles[side])) for side in SIDES
        }
        battle = session.battles["p1"]
        terminated = battle.finished
        truncated = not terminated and self.max_turns is not None and battle.turn >= self.max_turns
        infos = {side: self._info(side) for side in SIDES}
        for side in illegal:
            infos[side]["illegal_action"] = True
        if terminated or truncated:
            self.agents = []
            for side in SIDES:
                infos[side].update(won=bool(session.battles[side].won), turns=battle.turn)
        return (
            observations,
            rewards,
            dict.fromkeys(SIDES, terminated),
            dict.fromkeys(SIDES, truncated),
            infos,
        )

    def close(self) -> None:
        """Drop the battle and stop the simulator host; idempotent."""
        self._end_session()
        self._drop_host()
        self.agents = []

    # -- internals
    def _order(self, side: str, action: Any, illegal: set[str]) -> BattleOrder:
        legal = self._legal[side]
        order = legal.get(int(action))
        if order is not None:
            return order
        if legal:  # a real decision and an action it rules out
            if self.on_illegal == "raise":
                raise ValueError(
                    f"illegal action {action!r} for {side} in {self._session.battle_tag} "
                    f"(turn {self._session.battles[side].turn}); legal: {describe_legal(legal)}"
                )
            illegal.add(side)
        return DefaultBattleOrder()  # (team preview: no action maps to an order)

    def _observe(self) -> dict[str, dict[str, np.ndarray]]:
        session = self._session
        pending = set(session.pending)
        n_actions = int(self.action_spaces["p1"].n)
        box = self.observation_spaces["p1"]["observation"]
        mask_futile = self.mask_futile
        for side in SIDES:
            battle = session.battles[side]
            self._legal[side] = playable_actions(battle, mask_futile) if side in pending else {}
            obs = self.encoder.encode(battle)
            np.clip(obs, box.low, box.high, out=obs)
            self._last_obs[side] = {
                "observation": obs,
                "action_mask": mask_from_legal(self._legal[side], n_actions),
            }
        return {side: dict(obs) for side, obs in self._last_obs.items()}

    def _info(self, side: str) -> dict[str, Any]:
        session = self._session
        return {
            "battle_tag": session.battle_tag,
            "needs_action": side in session.pending,
        }

    def _draw_seed(self) -> list[int]:
        return [int(x) for x in self._rng.integers(0, _SEED_MAX, size=4)]

    def _draw_team(self) -> str | None:
        """A seat's packed team (None: random formats); of several, one drawn from the
        episode's stream, so a seeded reset replays the same teams."""
        pool = self._teams
        if pool is None:
            return None
        if isinstance(pool, TeamPool) and len(pool.teams) > 1:
            return pool.teams[int(self._rng.integers(len(pool.teams)))].packed
        return pool.yield_team()

    def _end_session(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            session.close()  # dropped from the host (nothing to forfeit: nobody is told)

    def _drop_host(self) -> None:
        host, self._host = self._host, None
        if host is not None:
            host.close()


def parallel_env(**kwargs: Any) -> ShowdownParallelEnv:
    """A :class:`ShowdownParallelEnv` (PettingZoo's ``parallel_env`` convention)."""
    return ShowdownParallelEnv(**kwargs)
