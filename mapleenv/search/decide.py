"""Decision-time search for a policy: where the policy is unsure, a lookahead over the
simulator (``search_host.js``: one turn per pair of choices, then ``rollout_turns`` greedy
turns) re-weights its prior.

For a decision, the own candidates are the legal actions the policy gives at least
``min_prior`` (the ``max_actions`` likeliest, the policy's own pick always among them); the
host scores each against the opponent's ``replies`` likeliest legal actions (all with 0) in
``worlds`` sampled worlds and returns ``q(a)``, its expected score against the opponent
model (the worlds' equilibrium strategy, ``uniform`` of it spread evenly). The choice maximises
``log prior(a) + q(a) / temperature`` (the prior re-weighted by ``exp(q / temperature)``).
A decision whose prior already puts ``confident`` on one action, a single legal action, or
a forced switch in the middle of a turn (after U-turn; the rest of the turn is unknown) is
the policy's own; the switch-in after a faint is searched. A host that dies or hangs is
warned about once and the policy plays on alone (``docs/search.md``).
"""

from __future__ import annotations

import dataclasses
import logging
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from mapleenv.search.host import SearchHost, SearchHostError, SearchRefused

logger = logging.getLogger(__name__)

OPPONENT_MODELS = ("greedy", "policy")  # search.opponent (docs/search.md)
ENGINES = ("showdown", "poke-engine")  # search.engine: the simulator, or the native engine
# what a decision's view carries for Python only (the host builds worlds from the rest)
_NOT_FOR_HOST = ("choices", "log")


def host_view(view: Mapping[str, Any]) -> dict[str, Any]:
    """A decision's view as the search host reads it: without the choices and the log."""
    return {k: v for k, v in view.items() if k not in _NOT_FOR_HOST}


class OpponentModel(Protocol):
    """Probabilities of the opponent's choices (host choice strings) in each world, from
    the worlds' opponent requests (:class:`mapleenv.search.opponent_model.PolicyOpponentModel`)."""

    def priors(
        self, view: Mapping[str, Any], requests: Sequence[Mapping[str, Any] | None]
    ) -> list[dict[str, float] | None]: ...


@dataclasses.dataclass
class SearchConfig:
    """How much to search per decision, and how to weigh it (``search.*`` settings)."""

    time_ms: float | None = 1000.0  # wall-clock budget per decision (None: sims only)
    sims: int | None = None  # simulated turns per decision (None: time only); deterministic
    worlds: int = 2  # opponent teams sampled per decision
    max_actions: int = 4  # own candidates, likeliest first
    min_prior: float = 0.01  # own candidates need at least this prior (the pick always in)
    confident: float = 0.95  # a prior this sure of one action is not searched
    temperature: float = 0.015  # weight of the prior against the search's scores
    uniform: float = 0.25  # share of the opponent model spread over all its actions
    rollout_turns: int = 2  # greedy turns played past each searched turn before scoring it
    replies: int = 5  # the opponent's likeliest replies searched per world (0: all of them)
    narrow_after: int = 0  # passes over all candidates before only the best two go on (0: never)
    opponent: str = "greedy"  # the opponent model's replies: "greedy" reading or "policy" prior
    prior_share: float = 0.5  # with opponent=policy: the model's share given to the prior
    hosts: int = 1  # search hosts (Node processes) searching decisions side by side
    seed: int = 0
    engine: str = "showdown"  # what plays the worlds: "showdown" or "poke-engine" (native)
    engine_iterations: int | None = None  # poke-engine MCTS iterations a world (None: time_ms)
    engine_prior: float = 0.0  # poke-engine: weight of log prior against log visit share
    engine_puct: float = 0.0  # poke-engine: weight of the prior in the root's PUCT term
    solver_iterations: int = 200  # regret-matching passes solving the worlds' game (showdown)

    def __post_init__(self) -> None:
        native = self.engine == "poke-engine" and self.engine_iterations is not None
        if self.time_ms is None and self.sims is None and not native:
            raise ValueError("search needs a budget: search.time_ms or search.sims")
        checks = {
            "search.time_ms": self.time_ms is None or self.time_ms > 0,
            "search.sims": self.sims is None or self.sims >= 1,
            "search.worlds": 1 <= self.worlds <= 64,
            "search.max_actions": 1 <= self.max_actions <= 26,
            "search.min_prior": 0 <= self.min_prior < 1,
            "search.confident": 0 < self.confident <= 1,
            "search.temperature": self.temperature > 0,
            "search.uniform": 0 <= self.uniform <= 1,
            "search.rollout_turns": 0 <= self.rollout_turns <= 500,
            "search.replies": 0 <= self.replies <= 26,
            "search.narrow_after": 0 <= self.narrow_after <= 1000,
            "search.opponent": self.opponent in OPPONENT_MODELS,
            "search.prior_share": 0 <= self.prior_share <= 1,
            "search.hosts": 1 <= self.hosts <= 64,
            "search.seed": 0 <= self.seed < 2**32,
            "search.engine": self.engine in ENGINES,
            "search.engine_iterations": self.engine_iterations is None
            or 1 <= self.engine_iterations <= 10_000_000,
            "search.engine_prior": 0 <= self.engine_prior <= 100,
            "search.engine_puct": 0 <= self.engine_puct <= 1000,
            "search.solver_iterations": 1 <= self.solver_iterations <= 100_000,
        }
        for name, ok in checks.items():
            if not ok:
                choices = {"search.opponent": OPPONENT_MODELS, "search.engine": ENGINES}
                what = (
                    "is not one of " + ", ".join(choices[name])
                    if name in choices
                    else "is out of range"
                )
                raise ValueError(f"{name} {what}: {getattr(self, name[7:])!r}")


# the SearchConfig fields search_host.js reads: a search request carries each by its own name
# (the host has no defaults of its own and refuses a request that lacks one)
HOST_SETTINGS = (
    "worlds",
    "sims",
    "time_ms",
    "rollout_turns",
    "replies",
    "temperature",
    "narrow_after",
    "opponent",
    "uniform",
    "prior_share",
    "solver_iterations",
)


def host_settings(config: SearchConfig) -> dict[str, Any]:
    """``config``'s :data:`HOST_SETTINGS`, as a ``search`` request carries them."""
    return {name: getattr(config, name) for name in HOST_SETTINGS}


@dataclasses.dataclass
class SearchStats:
    """What search did over a run: decisions seen, searched, overridden, time, sims."""

    decisions: int = 0
    searched: int = 0
    overridden: int = 0
    search_ms: float = 0.0
    build_ms: float = 0.0
    sims: int = 0
    refused: int = 0
    fallbacks: int = 0
    model_ms: float = 0.0  # the policy opponent model's time (part of time_ms)
    modelled: int = 0  # searched decisions the policy opponent model read (a world or more)
    iterations: int = 0  # search.engine=poke-engine: MCTS iterations, all worlds
    convert_ms: float = 0.0  # poke-engine: turning the worlds into engine states
    engine_ms: float = 0.0  # poke-engine: its MCTS
    engine_failures: int = 0  # poke-engine: decisions it could not search (the policy's)
    dropped: int = 0  # poke-engine: what of the worlds the engine could not be given

    def as_dict(self) -> dict[str, Any]:
        searched = max(1, self.searched)
        return {
            "decisions": self.decisions,
            "searched": self.searched,
            "overridden": self.overridden,
            "override_rate": round(self.overridden / max(1, self.decisions), 4),
            "mean_search_ms": round(self.search_ms / searched, 1),
            "mean_build_ms": round(self.build_ms / searched, 1),
            "mean_sims": round(self.sims / searched, 1),
            "mean_model_ms": round(self.model_ms / searched, 1),
            "modelled": self.modelled,
            "refused": self.refused,
            "fallbacks": self.fallbacks,
            "mean_iterations": round(self.iterations / searched, 1),
            "mean_convert_ms": round(self.convert_ms / searched, 2),
            "mean_engine_ms": round(self.engine_ms / searched, 1),
            "engine_failures": self.engine_failures,
            "mean_dropped": round(self.dropped / searched, 2),
        }


@dataclasses.dataclass
class Decision:
    """One decision to search: the view (``battle_view`` plus ``choices``: action -> the
    simulator choice string), the policy's probabilities over all actions and its pick."""

    view: Mapping[str, Any]
    probs: np.ndarray
    action: int
    # the view's choices by action number (JSON from an env worker makes the keys strings)
    choices: dict[int, str] = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.choices = {int(a): c for a, c in (self.view.get("choices") or {}).items()}


def candidates(
    probs: np.ndarray, legal: Sequence[int], pick: int, config: SearchConfig
) -> list[int]:
    """The own actions to search: the likeliest legal ones, the policy's pick first."""
    ranked = sorted(legal, key=lambda a: -float(probs[a]))
    chosen = [pick] + [a for a in ranked if a != pick and probs[a] >= config.min_prior]
    return chosen[: config.max_actions]


def log_prior(probs: np.ndarray, action: int) -> float:
    """The policy's log probability of ``action``, floored (a zero prior stays finite)."""
    return float(np.log(max(float(probs[action]), 1e-8)))


def combine(
    probs: np.ndarray, actions: Sequence[int], q: Sequence[float | None], temperature: float
) -> int | None:
    """The action maximising ``log prior + q / temperature`` (None when nothing was scored)."""
    best, best_score = None, -np.inf
    for action, value in zip(actions, q, strict=True):
        if value is None:
            continue
        score = log_prior(probs, action) + value / temperature
        if score > best_score:
            best, best_score = action, score
    return best


def needs_search(view: Mapping[str, Any], probs: np.ndarray, config: SearchConfig) -> bool:
    """Whether a decision is worth searching (see the module docs)."""
    choices = view.get("choices") or {}
    if len(choices) < 2 or (view.get("force_switch") and not _active_fainted(view)):
        return False
    legal = [int(a) for a in choices]
    return float(max(probs[a] for a in legal)) < config.confident


def _active_fainted(view: Mapping[str, Any]) -> bool:
    """Whether the seat's active Pokémon fainted: its forced switch is the end of a turn,
    which a world rebuilds; a mid-turn one (U-turn, Eject Button) is not searched."""
    own = (view.get("me") or {}).get("pokemon") or ()
    return any(mon.get("active") and mon.get("fainted") for mon in own)


def _explain(
    decision: Decision, actions: list[int], reply: dict[str, Any], best: int | None
) -> str:
    """One debug line: each candidate's choice, prior and score, and the pick."""
    choices = decision.choices
    parts = []
    for action, q in zip(actions, reply["q"], strict=True):
        choice = choices.get(action)
        score = "-" if q is None else f"{q:+.3f}"
        parts.append(f"{choice} p={decision.probs[action]:.2f} q={score}")
    view = decision.view
    return (
        f"{view.get('battle_tag')} turn {view.get('turn')}: "
        + "; ".join(parts)
        + f" -> {choices.get(best)} ({reply.get('sims')} sims)"
    )


class Searcher:
    """Searches decisions on its own search hosts (started on first use, stopped by
    :meth:`close`); ``stats`` counts what it did."""

    def __init__(
        self,
        config: SearchConfig,
        host_factory: Callable[[], SearchHost] = SearchHost,
        opponent_model: OpponentModel | None = None,
    ):
        if config.opponent == "policy" and opponent_model is None:
            raise ValueError("search.opponent=policy needs the agent's network as the model")
        self.config = config
        self.stats = SearchStats()
        self._factory = host_factory
        self._model = opponent_model if config.opponent == "policy" else None
        self._hosts: list[SearchHost] = []
        self._broken: str | None = None
        self._engine = None
        if config.engine == "poke-engine":  # EngineMissing (one line) when not installed
            from mapleenv.search.engine.batch import EngineSearcher

            self._engine = EngineSearcher(config)

    def reset_stats(self) -> None:
        """Start counting anew (one opponent's battles at a time)."""
        self.stats = SearchStats()

    def _ensure_hosts(self, battle_format: str) -> list[SearchHost]:
        """The hosts, started and warmed up for ``battle_format`` on first use."""
        while len(self._hosts) < self.config.hosts:
            host = self._factory()
            self._hosts.append(host)
            host.request("warm", format=battle_format)
        return self._hosts

    def _request(self, decision: Decision, actions: list[int]) -> dict[str, Any]:
        view = decision.view
        key = f"{view.get('battle_tag', '')}:{view.get('turn', 0)}".encode()
        return {
            **host_settings(self.config),
            "view": host_view(view),
            "own": [decision.choices[a] for a in actions],
            "seed": zlib.crc32(key, self.config.seed),
            # for narrowing (search_host.js): the candidates' scores as `combine` reads them
            "prior": [log_prior(decision.probs, a) for a in actions],
        }

    def choose(self, decisions: Sequence[Decision]) -> list[int]:
        """The action for each decision: searched ones side by side on the hosts (each host
        one decision at a time), the others the policy's own pick."""
        chosen = [d.action for d in decisions]
        self.stats.decisions += len(decisions)
        todo = [i for i, d in enumerate(decisions) if needs_search(d.view, d.probs, self.config)]
        if not todo or self._broken is not None:
            return chosen
        try:
            hosts = self._ensure_hosts(decisions[todo[0]].view["format"])
            for start in range(0, len(todo), len(hosts)):
                batch = todo[start : start + len(hosts)]
                self._search_batch(decisions, batch, hosts, chosen)
        except (SearchHostError, OSError, ValueError, KeyError) as exc:
            self._fail(exc)
        return chosen

    def _search_batch(
        self,
        decisions: Sequence[Decision],
        batch: list[int],
        hosts: list[SearchHost],
        chosen: list[int],
    ) -> None:
        if self._engine is not None:  # search.engine=poke-engine (mapleenv/search/engine/)
            requests = [self._request(decisions[i], list(decisions[i].choices)) for i in batch]
            found = self._engine.search_batch(
                [decisions[i] for i in batch], requests, hosts, self.stats
            )
            for i, best in zip(batch, found, strict=True):
                if best is not None and best != chosen[i]:
                    chosen[i] = best
                    self.stats.overridden += 1
            return
        sent = []
        for host, i in zip(hosts, batch, strict=False):
            d = decisions[i]
            actions = candidates(d.probs, list(d.choices), d.action, self.config)
            request = self._request(d, actions)
            if self._model is not None:
                self._add_foe_priors(host, d.view, request)
            host.submit("search", **request)
            sent.append((host, i, actions))
        for host, i, actions in sent:
            try:
                reply = host.collect()
            except SearchRefused as exc:  # this decision is the policy's; search goes on
                self.stats.refused += 1
                if self.stats.refused == 1:
                    logger.warning("%s (the policy's pick stands; later ones at debug)", exc)
                else:
                    logger.debug("%s", exc)
                continue
            self.stats.searched += 1
            self.stats.sims += int(reply.get("sims", 0))
            self.stats.search_ms += float(reply.get("ms", 0.0))
            self.stats.build_ms += float(reply.get("build_ms", 0.0))
            best = combine(decisions[i].probs, actions, reply["q"], self.config.temperature)
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug("%s", _explain(decisions[i], actions, reply, best))
            if best is not None and best != chosen[i]:
                chosen[i] = best
                self.stats.overridden += 1

    def _add_foe_priors(
        self, host: SearchHost, view: Mapping[str, Any], request: dict[str, Any]
    ) -> None:
        """Adds the opponent model's probabilities of the opponent's choices in each world
        the search will play (the worlds the host built for them, named by the handle it
        returned; None when the worlds cannot be built: the search then refuses the
        decision), and takes the time it
        took out of the decision's ``time_ms``: the budget is the decision's, model included."""
        start = time.perf_counter()
        try:
            built = host.request(
                "foe_requests", view=request["view"], seed=request["seed"], worlds=request["worlds"]
            )
        except SearchRefused:
            request["foe_prior"] = None
            return
        request["worlds_id"] = built["worlds_id"]  # the search plays the worlds read here
        priors = self._model.priors(view, built["requests"])
        spent = 1000 * (time.perf_counter() - start)
        self.stats.model_ms += spent
        self.stats.modelled += any(p is not None for p in priors)
        request["foe_prior"] = priors
        if request["time_ms"] is not None:
            request["time_ms"] = max(1.0, request["time_ms"] - spent)

    def _fail(self, exc: BaseException) -> None:
        self._broken = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        self.stats.fallbacks += 1
        logger.warning("search stopped, the policy plays alone from here: %s", self._broken)
        self.close()

    def close(self) -> None:
        hosts, self._hosts = self._hosts, []
        for host in hosts:
            host.close()
