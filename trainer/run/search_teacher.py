"""The search teacher in the training loop (expert iteration): its loss term, its columns and
the state a checkpoint keeps.

``env.search_teacher`` makes the env workers search a share of the agent's decisions with the
engine and return the search's improved policy as ``teacher_probs``
(:mod:`mapleenv.search.teacher`); ``algo.search_coef`` weighs the ``search`` term
(:func:`trainer.algos.terms.search_term`) that pulls the policy toward it. Each iteration
reads the workers' counters (``envs.call("search_teacher_stats")``) into the metrics row:
``search_decisions`` (searched this iteration), ``search_rate`` (their share of the
decisions) and ``search_ms`` (mean wall time a searched decision); the totals and the
teacher's settings go into every checkpoint (``search_teacher``), and a resumed run goes on
counting from them (a run resumed with other settings says so in one line).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from trainer.algos.terms import LossTerm, search_term
from trainer.config import AlgoConfig, TrainConfig

log = logging.getLogger(__name__)

COLUMNS = ("search_loss", "search_kl", "search_agreement", "search_decisions", "search_rate")
COLUMNS += ("search_ms",)
_COUNTERS = ("decisions", "searched", "ms")


def search_settings(cfg: TrainConfig) -> dict[str, Any] | None:
    """``env.search_teacher``'s settings when it is on, else None."""
    settings = getattr(cfg.env, "search_teacher", None)
    if settings is None or not settings.share > 0:
        return None
    return dataclasses.asdict(settings)


class SearchTeacherLog:
    """The trainer's side of the search teacher (module docs)."""

    def __init__(self, cfg: TrainConfig, envs: Any, has_targets: bool) -> None:
        algo: AlgoConfig = cfg.algo
        if algo.search_coef > 0 and not has_targets:
            raise ValueError(
                "algo.search_coef > 0 needs the search teacher: set env.search_teacher.share "
                "(e.g. 0.1) on a Showdown env"
            )
        self.envs, self.coef, self.active = envs, algo.search_coef, has_targets
        self.settings = search_settings(cfg) if has_targets else None
        self.totals = dict.fromkeys(_COUNTERS, 0.0)
        self._seen: list[dict[str, float]] = []  # each env's counters at the last read

    @property
    def columns(self) -> tuple[str, ...]:
        return COLUMNS if self.active else ()

    def terms(self) -> list[LossTerm]:
        """The ``search`` term (``coef`` 0: it only reports), with the teacher on."""
        return [search_term(self.coef)] if self.active else []

    def after_rollout(self) -> dict[str, float]:
        """This iteration's searched decisions, their rate and mean time (metrics row)."""
        if not self.active:
            return {}
        now = [{k: float(s.get(k, 0.0)) for k in _COUNTERS} for s in self.envs.call(
            "search_teacher_stats"
        )]  # fmt: skip
        delta = dict.fromkeys(_COUNTERS, 0.0)
        for i, counts in enumerate(now):
            before = self._seen[i] if i < len(self._seen) else dict.fromkeys(_COUNTERS, 0.0)
            restarted = counts["decisions"] < before["decisions"]  # a replaced worker
            for key in _COUNTERS:
                delta[key] += counts[key] - (0.0 if restarted else before[key])
        self._seen = now
        for key in _COUNTERS:
            self.totals[key] += delta[key]
        return {
            "search_decisions": delta["searched"],
            "search_rate": delta["searched"] / max(delta["decisions"], 1.0),
            "search_ms": delta["ms"] / max(delta["searched"], 1.0),
        }

    def state_dict(self) -> dict[str, Any] | None:
        """The totals and the settings, for the checkpoint (None with the teacher off)."""
        if not self.active:
            return None
        return {"settings": self.settings, "totals": dict(self.totals)}

    def load_state_dict(self, state: Mapping[str, Any] | None) -> None:
        """Go on from a checkpoint's totals; other settings than the checkpoint's are one
        line (a new budget or share is allowed)."""
        if not state or not self.active:
            return
        self.totals = {k: float(state.get("totals", {}).get(k, 0.0)) for k in _COUNTERS}
        before = state.get("settings")
        if before is not None and dict(before) != self.settings:
            log.info("search teacher settings changed on resume: %s -> %s", before, self.settings)
