"""The engine search as a teacher inside an env worker: at a share of the agent's decisions,
poke-engine's MCTS over worlds sampled from the agent's view (:class:`~mapleenv.opponents.
engine_search.EngineSearch`), its root visit shares turned into a soft target over the env's
actions (:func:`mapleenv.search.teacher.search_target`).

The learner's network lives in the trainer, not in the workers, so the search's prior is
either none (the engine alone: the target is the visit shares) or a frozen checkpoint read by
each worker (``search_teacher.checkpoint``), stepped at every decision of the battle (its
recurrent state must follow the battle) and searched at the drawn ones. Runs on the worker's
CPU: one search host (a Node child) and, with a prior, a CPU copy of that policy per env.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np
from poke_env.battle.abstract_battle import AbstractBattle

from mapleenv.encoders import playable_actions
from mapleenv.engine import EngineNotInstalledError
from mapleenv.engine import require_engine as _require_engine
from mapleenv.search import Decision, EngineMissing, readable_view
from mapleenv.search.teacher import SearchTeacherConfig, choice_target
from mapleenv.showdown.formats import is_doubles_format

logger = logging.getLogger(__name__)


def check_search_teacher(config: SearchTeacherConfig, battle_format: str) -> None:
    """The start check of an enabled teacher, before any env worker: the engine installed
    (one line naming the install step), a singles format, the prior's checkpoint readable
    by the safe loader and fit for the format (one line each)."""
    if not config.enabled:
        return
    try:
        _require_engine()
    except EngineNotInstalledError as exc:  # a ValueError: bad input, one line, exit code 2
        raise EngineMissing(f"search_teacher.share > 0 needs the engine: {exc}") from None
    if is_doubles_format(battle_format):
        raise ValueError(f"search_teacher searches singles only, not {battle_format!r}")
    if config.checkpoint is not None:
        from mapleenv.opponents.policy import check_policy_files

        check_policy_files(f"policy:{config.checkpoint}", battle_format)


class SearchTeacher:
    """One env's search teacher: :meth:`target` for each of the agent's decisions."""

    def __init__(self, config: SearchTeacherConfig, seed: int | None = None):
        from mapleenv.opponents.engine_search import EngineSearch

        self.config = config
        self._rng = np.random.default_rng([config.seed, 0 if seed is None else int(seed)])
        self._search = EngineSearch(
            time_ms=config.time_ms, iterations=config.iterations, worlds=config.worlds,
            engine_prior=config.engine_prior, confident=config.confident, seed=config.seed,
        )  # fmt: skip
        self._player = None
        if config.checkpoint is not None:
            import torch

            from mapleenv.opponents.policy import FrozenPolicy, PolicyOpponent

            torch.set_num_threads(1)  # as policy opponents: the worker shares the CPU
            from mapleenv.policies import read_snapshot

            policy = FrozenPolicy.from_snapshot(read_snapshot(config.checkpoint))
            self._player = PolicyOpponent([policy], sample=False, searcher=self)
        self._wanted = False
        self._mask: np.ndarray | None = None
        self._target: np.ndarray | None = None
        self.decisions = 0  # decisions seen
        self.searched = 0  # decisions given a target
        self.search_ms = 0.0

    def target(self, battle: AbstractBattle, mask: np.ndarray) -> np.ndarray:
        """The search's target ``[A]`` for the current decision (``mask``: the env's legal
        actions), all zeros where this decision is not searched."""
        none = np.zeros(len(mask), dtype=np.float32)
        if battle.finished:
            return none
        self.decisions += 1
        self._wanted = bool(self._rng.random() < self.config.share)  # one draw a decision
        self._mask, self._target = mask, None
        if self._player is not None:
            self._player.choose_move(battle)  # steps the prior; searched when wanted (choose)
        elif self._wanted:
            self._engine_alone(battle)
        return none if self._target is None else self._target

    def _engine_alone(self, battle: AbstractBattle) -> None:
        legal = playable_actions(battle, False)
        view = readable_view(battle, legal) if len(legal) > 1 else None
        if view is None:
            return
        probs = np.zeros(len(self._mask), dtype=np.float32)
        probs[list(legal)] = 1.0 / len(legal)
        self._searched(Decision(view, probs, min(legal)), with_prior=False)

    def choose(self, decisions: list[Decision]) -> list[int]:
        """The prior's searcher (:class:`~mapleenv.opponents.policy.PolicyOpponent` asks it):
        a drawn decision is searched; the pick is never played, only the target kept."""
        for decision in decisions:
            if self._wanted:
                self._searched(decision, with_prior=True)
        return [d.action for d in decisions]

    def _searched(self, decision: Decision, with_prior: bool) -> None:
        started = time.perf_counter()
        self._search.decide(decision, with_prior=with_prior)
        last = self._search.last
        if last is None or not last.searched:
            return
        prior = decision.probs if with_prior else None
        target = choice_target(
            last.shares, decision.choices, self._mask, prior, self.config.engine_prior
        )
        if target.any():
            self._target = target
            self.searched += 1
            self.search_ms += 1000 * (time.perf_counter() - started)

    def stats(self) -> dict[str, Any]:
        """Decisions seen and searched, and the search time, since the env started."""
        return {"decisions": self.decisions, "searched": self.searched, "ms": self.search_ms}

    def close(self) -> None:
        self._search.close()
