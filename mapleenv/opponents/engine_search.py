"""Decision-time search on the native engine for any poke-env ``Player``: from a poke-env
battle (the player's own view of it), sampled worlds as poke-engine states and a searched
``BattleOrder``, guided by a Maple checkpoint's policy when one is given.

    from mapleenv.opponents.engine_search import EngineSearch

    class SearchingPlayer(Player):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.search = EngineSearch("models/attention_ppo_gen9random.pt", time_ms=100)

        def choose_move(self, battle):
            return self.search.choose(battle).order

``examples/engine_search_player.py`` plays one; docs/search.md says how the search works.
Singles only. With a checkpoint, :meth:`EngineSearch.choose` must see every decision of a
battle in order (the policy is recurrent); :meth:`EngineSearch.states` may be called any
time. A world the search cannot build or the engine cannot take, or a search host that
dies, leaves the decision to the policy (or the first legal choice without one), with one
warning.
"""

from __future__ import annotations

import dataclasses
import logging
import zlib
from pathlib import Path
from typing import Any

import numpy as np
from poke_env.battle.abstract_battle import AbstractBattle
from poke_env.player.battle_order import BattleOrder, DefaultBattleOrder

from mapleenv.actions import action_space_size
from mapleenv.encoders import playable_actions
from mapleenv.search import (
    Decision,
    SearchConfig,
    SearchHost,
    SearchHostError,
    SearchStats,
    decision_view,
    host_view,
    require_engine,
)

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class SearchedChoice:
    """A searched decision: the order to send, the worlds searched as poke-engine states
    (side one: the player), each choice's visit share (simulator choice string -> share
    averaged over the worlds; empty when not searched) and the policy's prior (None
    without a checkpoint)."""

    order: BattleOrder
    states: list[Any]
    shares: dict[str, float]
    prior: dict[str, float] | None
    searched: bool


class EngineSearch:
    """poke-engine's MCTS over worlds sampled from a battle's view (``search.engine=
    poke-engine``); one search host (a Node process) of its own, stopped by :meth:`close`."""

    def __init__(
        self,
        checkpoint: str | Path | None = None,
        *,
        time_ms: float | None = 100.0,
        iterations: int | None = None,
        worlds: int = 2,
        engine_prior: float = 0.0,
        engine_puct: float = 0.0,
        confident: float = 0.95,
        seed: int = 0,
    ):
        require_engine()  # EngineMissing: one line naming the install step
        from mapleenv.search.engine.batch import EngineSearcher

        self.config = SearchConfig(
            engine="poke-engine", time_ms=time_ms, engine_iterations=iterations,
            worlds=worlds, engine_prior=engine_prior, engine_puct=engine_puct,
            confident=confident, seed=seed,
        )  # fmt: skip
        self._engine = EngineSearcher(self.config)
        self.stats = SearchStats()  # what it did, as the evaluation JSON counts it
        self._host: SearchHost | None = None
        self._broken = False
        self._last: SearchedChoice | None = None
        self._player = None
        if checkpoint is not None:
            from mapleenv.opponents.policy import FrozenPolicy, PolicyOpponent
            from mapleenv.policies import read_snapshot

            policy = FrozenPolicy.from_snapshot(read_snapshot(str(checkpoint)))
            self._player = PolicyOpponent([policy], sample=False, searcher=_Capture(self))

    def states(self, battle: AbstractBattle) -> list[Any]:
        """The ``worlds`` sampled for ``battle``'s current decision, as poke-engine states
        (side one: the player)."""
        from mapleenv.search.engine.state import to_state

        legal = playable_actions(battle, False)
        view = decision_view(battle, legal)
        reply = self._ensure_host(view["format"]).request("dump_worlds", **self._request(view))
        return [to_state(dump).state for dump in reply["worlds"]]

    def choose(self, battle: AbstractBattle) -> SearchedChoice:
        """The searched order for ``battle``'s current decision (and what the search saw)."""
        if self._player is not None:
            self._last = None
            order = self._player.choose_move(battle)
            last = self._last or SearchedChoice(order, [], {}, None, False)
            return dataclasses.replace(last, order=order)
        legal = playable_actions(battle, False)
        if not legal:
            return SearchedChoice(DefaultBattleOrder(), [], {}, None, False)
        probs = np.zeros(action_space_size(battle.gen), dtype=np.float32)
        probs[list(legal)] = 1.0 / len(legal)
        decision = Decision(decision_view(battle, legal), probs, min(legal))
        action = self.decide(decision, with_prior=False)
        return dataclasses.replace(self._last, order=legal[action])

    def decide(self, decision: Decision, with_prior: bool = True) -> int:
        """The searched action of one :class:`~mapleenv.search.Decision` (recorded for
        :meth:`choose`)."""
        from mapleenv.search.decide import needs_search

        prior = (
            {c: float(decision.probs[a]) for a, c in decision.choices.items()}
            if with_prior
            else None
        )
        self._last = SearchedChoice(DefaultBattleOrder(), [], {}, prior, False)
        self.stats.decisions += 1
        if self._broken or not needs_search(decision.view, decision.probs, self.config):
            return decision.action
        try:
            host = self._ensure_host(decision.view["format"])
            request = self._request(decision.view)
            (best,) = self._engine.search_batch([decision], [request], [host], self.stats)
        except (SearchHostError, OSError) as exc:
            self._broken = True
            logger.warning("engine search stopped, the policy plays alone: %s", exc)
            return decision.action
        result = self._engine.last
        if result is not None:
            shares = {decision.choices[a]: s for a, s in result.shares.items()}
            self._last = SearchedChoice(DefaultBattleOrder(), result.states, shares, prior, True)
        return decision.action if best is None else best

    @property
    def last(self) -> SearchedChoice | None:
        """What the last :meth:`decide` saw (``searched``: whether the engine ran)."""
        return self._last

    def _request(self, view: dict[str, Any]) -> dict[str, Any]:
        key = f"{view.get('battle_tag', '')}:{view.get('turn', 0)}".encode()
        return {
            "view": host_view(view),
            "own": list(view["choices"].values()),
            "seed": zlib.crc32(key, self.config.seed),
            "worlds": self.config.worlds,
        }

    def _ensure_host(self, battle_format: str) -> SearchHost:
        if self._host is None:
            self._host = SearchHost()
            self._host.request("warm", format=battle_format)
        return self._host

    def close(self) -> None:
        host, self._host = self._host, None
        if host is not None:
            host.close()

    def __enter__(self) -> EngineSearch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Capture:
    """The searcher a checkpoint's :class:`PolicyOpponent` asks: the engine search."""

    def __init__(self, search: EngineSearch):
        self._search = search

    def choose(self, decisions: list[Decision]) -> list[int]:
        return [self._search.decide(d) for d in decisions]
