"""``DirectBackend``: the ``direct`` battle backend of :class:`mapleenv.env.PokemonEnv`.

Each env owns one Node child (:class:`SimHost`), or a connection to one of a few shared
hosts (:mod:`mapleenv.backends.direct.pool`), that runs its battles in-process with the npm
package's ``BattleStream``; no Showdown server, websocket, rooms or users. The
battles are poke-env ``Battle`` objects fed from the simulator's stream, so the encoder,
action mask, reward and opponent are the same code as for the ``server`` backend.

Battles are seeded: battle ``k`` of a backend built with ``seed=s`` uses simulator PRNG
and team-generator seeds drawn from ``numpy.random.default_rng(s)`` (``reset(seed=...)``
restarts that stream), so the same seed and the same choices of both sides replay the
same battle. (poke-env's baseline opponents draw their random choices from Python's
``random`` module, which this backend does not seed.)
"""

from __future__ import annotations

import itertools
import logging
from pathlib import Path
from typing import Any

import numpy as np
from poke_env.battle.battle import Battle
from poke_env.player.battle_order import BattleOrder, ForfeitBattleOrder
from poke_env.player.player import Player
from poke_env.teambuilder.constant_teambuilder import ConstantTeambuilder
from poke_env.teambuilder.teambuilder import Teambuilder

from mapleenv.backends import BackendSpec, BattleAborted
from mapleenv.backends.direct.host import SimHost, SimHostConnection, SimHostError
from mapleenv.backends.direct.pool import claim_host
from mapleenv.backends.direct.session import DirectBattle
from mapleenv.opponents import opponent_battles

logger = logging.getLogger(__name__)

_SEED_MAX = 1 << 16  # the simulator's gen5 PRNG takes four 16-bit words


def _packed_team(team: Any) -> str | None:
    """A packed team string from poke-env's ``team`` argument (None: random formats)."""
    if team is None:
        return None
    builder = team if isinstance(team, Teambuilder) else ConstantTeambuilder(team)
    return builder.yield_team()


class DirectBackend:
    """Battles of one env on its own simulator host (see module docs).

    Args:
        battle_format: singles format id.
        opponent: non-listening poke-env ``Player`` choosing on its own (p2) ``Battle``.
        seed: seeds the stream of per-battle simulator seeds (``None``: fresh entropy).
        log_dir: unused (the host keeps no log; its stderr tail is in host errors).
        team: the agent's team for formats that need one (a poke-env ``Teambuilder`` or
            team text), as for the server backend.
        opponent_team: the opponent's team (default: ``team``).
        agent_username: the agent's name in battle logs.
        record: keep each battle's input and simulator output (``battle.input_log``...).
        showdown_dir: the pokemon-showdown npm package (default: ``find_showdown()``).
        host_pool: ``SimHostPool.spec`` of shared hosts to use instead of an own Node child.
    """

    def __init__(
        self,
        *,
        battle_format: str,
        opponent: Player,
        seed: int | None = None,
        log_dir: str | Path | None = None,
        team: Any = None,
        opponent_team: Any = None,
        agent_username: str = "Maple",
        record: bool = False,
        showdown_dir: str | Path | None = None,
        host_pool: dict[str, Any] | None = None,
    ):
        self.battle_format = battle_format
        self.opponent = opponent
        self.team = team
        self.opponent_team = team if opponent_team is None else opponent_team
        self.agent_username = agent_username
        self.record = record
        self._rng = np.random.default_rng(seed)
        self._ids = itertools.count()
        # battle ids: drawn from the seed, so the same in every run under one seed (the
        # search seeds its worlds from the battle tag; the process id made them differ),
        # and unique on a shared host as the envs sharing it have seeds of their own
        self._prefix = f"x{self._rng.integers(1 << 30)}"
        self.host: SimHost | SimHostConnection
        if host_pool is not None:
            try:
                self.host = SimHostConnection(*claim_host(host_pool))
            except SimHostError as exc:
                raise BattleAborted(str(exc)) from exc
        else:
            self.host = SimHost(showdown_dir)
        self.session: DirectBattle | None = None

    @classmethod
    def from_spec(
        cls,
        spec: BackendSpec,
        *,
        opponent: Player,
        seed: int | None = None,
        team: Any = None,
        opponent_team: Any = None,
    ) -> DirectBackend:
        """The backend of an env: the format and the backend's own options
        (``spec.backend_kwargs``: ``host_pool``, ``record``...) from its spec."""
        return cls(
            battle_format=spec.battle_format,
            opponent=opponent,
            seed=seed,
            team=team,
            opponent_team=opponent_team,
            **spec.backend_kwargs,
        )

    @property
    def battle(self) -> Battle | None:
        return self.session.agent_battle if self.session is not None else None

    def reset(self, seed: int | None = None) -> Battle:
        """Finish the current battle (forfeit) and start a new one; its first decision."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._end_session()
        session = DirectBattle(
            self.host,
            f"{self._prefix}-{next(self._ids)}",
            self.battle_format,
            self.opponent,
            agent_username=self.agent_username,
            seed=self._draw_seed(),
            team_seeds={"p1": self._draw_seed(), "p2": self._draw_seed()},
            agent_team=_packed_team(self.team),
            opponent_team=_packed_team(self.opponent_team),
            record=self.record,
        )
        self.session = session
        opponent_battles(self.opponent)[session.battle_tag] = session.opponent_battle
        try:
            session.start()
        except SimHostError as exc:
            raise BattleAborted(str(exc)) from exc
        return session.agent_battle

    def _draw_seed(self) -> list[int]:
        return [int(x) for x in self._rng.integers(0, _SEED_MAX, size=4)]

    def step(self, order: BattleOrder) -> Battle:
        """Play the agent's order; the agent's next decision (or the finished battle)."""
        if self.session is None:
            raise RuntimeError("no battle: call reset()")
        try:
            if isinstance(order, ForfeitBattleOrder):
                self.session.forfeit()
            else:
                self.session.step(order)
        except SimHostError as exc:
            raise BattleAborted(str(exc)) from exc
        return self.session.agent_battle

    def _end_session(self) -> None:
        session, self.session = self.session, None
        if session is None:
            return
        opponent_battles(self.opponent).pop(session.battle_tag, None)
        try:
            if not session.finished:
                session.forfeit()
        except SimHostError as exc:
            raise BattleAborted(str(exc)) from exc
        finally:
            session.close()

    def close(self) -> None:
        """Drop the battle and stop the Node child."""
        try:
            if self.session is not None:
                opponent_battles(self.opponent).pop(self.session.battle_tag, None)
                if self.host.alive():
                    self.session.close()
        finally:
            self.session = None
            self.host.close()
