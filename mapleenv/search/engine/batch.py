"""Decisions searched on the native engine (``search.engine=poke-engine``) for
:class:`mapleenv.search.Searcher`: each decision's worlds built and dumped by a search host
(the same worlds the Showdown search would play, ``dump_worlds``), searched by poke-engine's
MCTS, the choice made with the policy's prior. A view the host cannot build a world from, or
a world the engine cannot take, leaves that decision to the policy (one warning, later ones
at debug) and search goes on."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from mapleenv.search.engine.available import require_engine
from mapleenv.search.host import SearchHost, SearchRefused

logger = logging.getLogger("mapleenv.search.decide")  # one logger for both engines' warnings


class EngineSearcher:
    """Searches batches of decisions, one host each side by side for the worlds, then the
    engine on each in turn; counts into the :class:`~mapleenv.search.SearchStats` given."""

    def __init__(self, config: Any):
        require_engine()  # a missing engine is one line at start, naming the install step
        from mapleenv.search.engine.search import EngineFailure, engine_choice, search_worlds

        self.config = config
        self._failure = EngineFailure
        self._choice = engine_choice
        self._search = search_worlds
        self.last: Any = None  # the last decision's EngineResult (None: not searched)

    def search_batch(
        self,
        decisions: Sequence[Any],
        requests: Sequence[Mapping[str, Any]],
        hosts: Sequence[SearchHost],
        stats: Any,
    ) -> list[int | None]:
        """The engine's choice for each decision (None: the policy's pick stands).
        ``requests``: per decision the world request (``view``, ``own``: all its choice
        strings, ``seed``, ``worlds``), as the Showdown search would send it."""
        sent = []
        for host, decision, request in zip(hosts, decisions, requests, strict=False):
            started = time.perf_counter()
            host.submit(
                "dump_worlds",
                view=request["view"],
                own=list(request["own"]),
                seed=request["seed"],
                worlds=request["worlds"],
            )
            sent.append((host, decision, started, int(request["seed"])))
        return [self._one(host, d, started, seed, stats) for host, d, started, seed in sent]

    def _one(
        self, host: SearchHost, decision: Any, started: float, seed: int, stats: Any
    ) -> int | None:
        self.last = None
        try:
            reply = host.collect()
        except SearchRefused as exc:
            stats.refused += 1
            _warn_first(stats.refused, "%s (the policy's pick stands; later ones at debug)", exc)
            return None
        config = self.config
        try:
            result = self._search(
                reply["worlds"],
                decision.choices,
                time_ms=config.time_ms,
                iterations=config.engine_iterations,
                started=started,
                seed=seed,
                prior=_puct_prior(decision, config.engine_puct),
            )
        except self._failure as exc:
            stats.engine_failures += 1
            _warn_first(
                stats.engine_failures, "%s (the policy's pick stands; later ones at debug)", exc
            )
            return None
        self.last = result
        stats.searched += 1
        stats.iterations += result.iterations
        stats.build_ms += float(reply.get("build_ms", 0.0))
        stats.convert_ms += result.convert_ms
        stats.engine_ms += result.mcts_ms
        stats.search_ms += 1000 * (time.perf_counter() - started)
        stats.dropped += len(result.dropped)
        best = self._choice(decision.probs, result, config.engine_prior)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("%s", _explain(decision, result, best))
        return best


def _puct_prior(decision: Any, weight: float) -> dict[int, float] | None:
    """Each own action's weight in the root's PUCT term (None: ``engine_puct`` 0)."""
    if weight <= 0:
        return None
    return {a: weight * float(decision.probs[a]) for a in decision.choices}


def _warn_first(count: int, message: str, exc: BaseException) -> None:
    if count == 1:
        logger.warning(message, exc)
    else:
        logger.debug(message, exc)


def _explain(decision: Any, result: Any, best: int | None) -> str:
    """One debug line: each action's choice, prior, visit share and score, and the pick."""
    parts = [
        f"{decision.choices.get(a)} p={decision.probs[a]:.2f} n={share:.2f} "
        f"q={result.scores[a]:.3f}"
        for a, share in sorted(result.shares.items(), key=lambda kv: -kv[1])
    ]
    view = decision.view
    return (
        f"{view.get('battle_tag')} turn {view.get('turn')}: "
        + "; ".join(parts)
        + f" -> {decision.choices.get(best)} ({result.iterations} iterations)"
        + (f"; dropped {','.join(sorted(set(result.dropped)))}" if result.dropped else "")
    )
