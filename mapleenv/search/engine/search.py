"""The engine's search for one decision: poke-engine's MCTS on each world (a time budget
shared out over the worlds, or an iteration budget per world), the root's visit shares and
scores averaged over the worlds, and the choice they make with the policy's prior.

poke-engine's MCTS is a decoupled UCB1 tree over both sides' simultaneous choices, chance
sampled, each new node scored by the engine's hand evaluation (no playout); it runs in
chunks of 1000 iterations (a budget is rounded up to them). Maple builds it with a seed for
its random numbers (``mapleenv.engine.patches``): each world is searched under a seed
drawn from the decision's, so an iteration budget gives the same answer under the same seed
(a time budget does not: the work done depends on the clock). With ``engine_puct`` the
policy's prior steers the tree at the root: own choice ``a`` gets ``engine_puct * prior(a) *
sqrt(N) / (1 + n(a))`` on top of its UCB1 score, so the iterations go where the policy looks
first (AlphaZero's PUCT term; 0: the released search). The choice maximises
``engine_prior * log prior(a) + log share(a)``: the visit share the engine gives the own
action ``a``, re-weighted by the policy's prior (``engine_prior=0``: the engine alone).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import poke_engine as pe

from mapleenv.search.engine.state import to_state

SHARE_FLOOR = 1e-4  # a share the engine never visited stays finite in the log


class EngineFailure(RuntimeError):
    """The engine could not take or search a world (a conversion error or an engine panic)."""


@dataclasses.dataclass
class EngineResult:
    """One decision's search: per own action (the view's action numbers) its visit share
    and mean score, averaged over the worlds that allowed it; the work done."""

    shares: dict[int, float]
    scores: dict[int, float]
    iterations: int = 0
    worlds: int = 0
    convert_ms: float = 0.0
    mcts_ms: float = 0.0
    dropped: list[str] = dataclasses.field(default_factory=list)
    states: list[Any] = dataclasses.field(default_factory=list)  # the engine states searched


def world_seed(seed: int, world: int) -> int:
    """The engine's seed for world ``world`` of a decision searched under ``seed``."""
    return (int(seed) * 1_000_003 + world) % 2**64


def _mcts(
    state: pe.State,
    duration_ms: int,
    iterations: int,
    seed: int,
    prior: dict[str, float] | None = None,
) -> pe.MctsResult:
    """The engine's MCTS, one thread, ``prior`` weighting own root choices by engine name; an
    engine panic (a Rust panic is a BaseException in Python) becomes an
    :class:`EngineFailure`."""
    try:
        return pe.monte_carlo_tree_search(state, duration_ms, iterations, 1, seed, prior)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 (pyo3's PanicException derives from it)
        raise EngineFailure(f"poke-engine failed on a world: {exc}") from exc


def search_worlds(
    dumps: Sequence[Mapping[str, Any]],
    choices: Mapping[int, str],
    *,
    time_ms: float | None,
    iterations: int | None,
    started: float | None = None,
    seed: int = 0,
    prior: Mapping[int, float] | None = None,
) -> EngineResult:
    """MCTS on each dumped world, world ``k`` under ``world_seed(seed, k)``. ``choices``:
    action -> the view's choice string; with ``iterations`` each world gets that many, else
    the time left of ``time_ms`` (counted from ``started``, a ``perf_counter`` time; now by
    default) is shared out evenly over the worlds left. ``prior``: action -> its weight in
    the root's PUCT term (None: the released UCB1)."""
    started = time.perf_counter() if started is None else started
    by_choice = {c: a for a, c in choices.items()}
    share_sum: dict[int, float] = {}
    score_sum: dict[int, float] = {}
    seen: dict[int, int] = {}
    result = EngineResult(shares={}, scores={})
    for k, dump in enumerate(dumps):
        t0 = time.perf_counter()
        try:
            converted = to_state(dump)
        except (KeyError, TypeError, ValueError) as exc:
            raise EngineFailure(f"cannot convert a world for poke-engine: {exc!r}") from exc
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # noqa: BLE001 (an engine panic on a name)
            raise EngineFailure(f"poke-engine refused a world: {exc}") from exc
        t1 = time.perf_counter()
        if iterations:
            duration, count = 0, int(iterations)
        else:
            left = (time_ms or 0.0) - 1000 * (t1 - started)
            duration, count = max(1, int(left / (len(dumps) - k))), 0
        weights = None if prior is None else _by_name(prior, choices, converted.names)
        mcts = _mcts(converted.state, duration, count, world_seed(seed, k), weights)
        t2 = time.perf_counter()
        result.convert_ms += 1000 * (t1 - t0)
        result.mcts_ms += 1000 * (t2 - t1)
        result.iterations += int(mcts.total_visits)
        result.worlds += 1
        result.dropped.extend(converted.dropped)
        result.states.append(converted.state)
        _add_root(mcts, converted.names, by_choice, share_sum, score_sum, seen)
    result.shares = {a: share_sum[a] / seen[a] for a in seen}
    result.scores = {a: score_sum[a] / seen[a] for a in seen}
    return result


def _by_name(
    prior: Mapping[int, float], choices: Mapping[int, str], names: Mapping[str, str | None]
) -> dict[str, float]:
    """The prior's weights by the engine's names of the world's own choices."""
    weights = {}
    for action, weight in prior.items():
        name = names.get(choices.get(action, ""))
        if name is not None:
            weights[name] = float(weight)
    return weights


def _add_root(
    mcts: pe.MctsResult,
    names: Mapping[str, str | None],
    by_choice: Mapping[str, int],
    share_sum: dict[int, float],
    score_sum: dict[int, float],
    seen: dict[int, int],
) -> None:
    """Adds one world's root statistics of the own side, by action."""
    by_name = {n: by_choice[c] for c, n in names.items() if n is not None and c in by_choice}
    rows = [(by_name[r.move_choice], r) for r in mcts.side_one if r.move_choice in by_name]
    total = sum(r.visits for _, r in rows)
    if total <= 0:
        return
    for action, row in rows:
        share_sum[action] = share_sum.get(action, 0.0) + row.visits / total
        score = row.total_score / row.visits if row.visits else 0.0
        score_sum[action] = score_sum.get(action, 0.0) + score
        seen[action] = seen.get(action, 0) + 1


def engine_choice(probs: np.ndarray, result: EngineResult, prior_weight: float) -> int | None:
    """The action maximising ``prior_weight * log prior + log share`` (None: none searched)."""
    best, best_score = None, -np.inf
    for action, share in result.shares.items():
        prior = max(float(probs[action]), 1e-8)
        score = prior_weight * float(np.log(prior)) + float(np.log(max(share, SHARE_FLOOR)))
        if score > best_score:
            best, best_score = action, score
    return best
