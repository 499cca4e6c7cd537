"""The engine search as a training teacher (expert iteration): its settings and its target.

At a share of the rollout's decisions an env worker runs the engine search
(``search.engine=poke-engine``) on the battle it is playing and stores the search's improved
policy with the step, a soft target ``teacher_probs`` ``[A]`` over the env's actions (all
zeros: not searched); the trainer's ``search`` loss term pulls the policy toward it
(docs/training.md, "Expert iteration"). :class:`SearchTeacherConfig` is the one typed home of
the settings (``env.search_teacher.*``, checked once when made); :func:`search_target` turns
a search's root statistics into the target. The searching itself is
:class:`mapleenv.opponents.search_teacher.SearchTeacher`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np


@dataclasses.dataclass
class SearchTeacherConfig:
    """``env.search_teacher.*``: which decisions the env workers search and how hard.

    ``share`` of the agent's decisions (drawn per decision; 0: off) are searched by
    poke-engine's MCTS over ``worlds`` sampled worlds, for ``time_ms`` a decision or
    ``iterations`` a world (deterministic work). ``checkpoint``: a frozen Maple checkpoint
    whose policy is the search's prior (each worker's own copy, stepped at every decision;
    decisions it is ``confident`` of are not searched); ``None``: the engine alone, the
    target its root visit shares. With a prior the target is ``prior ** engine_prior *
    share``, normalised; ``engine_prior=0`` (the default) keeps the shares alone, as the
    evaluation search does: the prior's re-weighting made the engine search weaker at
    decision time (docs/results/search.md)."""

    share: float = 0.0
    time_ms: float | None = 50.0
    iterations: int | None = None
    worlds: int = 2
    checkpoint: str | None = None
    engine_prior: float = 0.0
    confident: float = 0.95
    seed: int = 0

    def __post_init__(self) -> None:
        checks = {
            "share": 0.0 <= self.share <= 1.0,
            "time_ms": self.time_ms is None or self.time_ms > 0,
            "iterations": self.iterations is None or 1 <= self.iterations <= 10_000_000,
            "worlds": 1 <= self.worlds <= 64,
            "engine_prior": 0.0 <= self.engine_prior <= 100.0,
            "confident": 0.0 < self.confident <= 1.0,
            "seed": 0 <= self.seed < 2**32,
        }
        for name, ok in checks.items():
            if not ok:
                raise ValueError(f"search_teacher.{name} is out of range: {getattr(self, name)!r}")
        if self.time_ms is None and self.iterations is None:
            raise ValueError("search_teacher needs a budget: time_ms or iterations")

    @property
    def enabled(self) -> bool:
        return self.share > 0

    @classmethod
    def from_value(cls, value: Any) -> SearchTeacherConfig:
        """A config from ``None`` (off), a mapping of its fields or a config (as it is)."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            fields = {f.name for f in dataclasses.fields(cls)}
            unknown = sorted(set(value) - fields)
            if unknown:
                raise ValueError(
                    f"unknown search_teacher setting(s) {', '.join(unknown)}; "
                    f"valid: {', '.join(sorted(fields))}"
                )
            return cls(**dict(value))
        # a structured config of the same fields (an OmegaConf node, another dataclass)
        if dataclasses.is_dataclass(value):
            return cls(**dataclasses.asdict(value))
        raise TypeError(f"search_teacher: expected a mapping of settings, got {value!r}")


def choice_target(
    shares: Mapping[str, float],
    choices: Mapping[int, str],
    mask: np.ndarray,
    prior: np.ndarray | None = None,
    prior_weight: float = 0.0,
) -> np.ndarray:
    """:func:`search_target` of a search's visit shares by simulator choice string (as
    :class:`~mapleenv.opponents.engine_search.SearchedChoice` holds them), ``choices``: the
    decision's action -> choice string (the env's action numbers)."""
    by_choice = {choice: action for action, choice in choices.items()}
    by_action = {by_choice[c]: s for c, s in shares.items() if c in by_choice}
    return search_target(by_action, mask, prior, prior_weight)


def search_target(
    shares: Mapping[int, float],
    mask: np.ndarray,
    prior: np.ndarray | None = None,
    prior_weight: float = 0.0,
) -> np.ndarray:
    """The soft target ``[A]`` float32 of one searched decision: the root visit share of
    each action (the env's action numbers), re-weighted by ``prior ** prior_weight`` when a
    prior is given, kept to the actions ``mask`` allows and normalised; all zeros when
    nothing allowed was visited (the step then has no target)."""
    target = np.zeros(len(mask), dtype=np.float64)
    for action, share in shares.items():
        if 0 <= action < len(mask) and mask[action] and share > 0:
            target[action] = float(share)
    if prior is not None and prior_weight > 0:
        target *= np.power(np.clip(np.asarray(prior, dtype=np.float64), 0.0, 1.0), prior_weight)
    total = target.sum()
    if not np.isfinite(total) or total <= 0:
        return np.zeros(len(mask), dtype=np.float32)
    return (target / total).astype(np.float32)
