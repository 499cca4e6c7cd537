"""The env workers' teacher is computed only while kickstarting can use it.

With ``env.teacher`` every env asks its teacher (e.g. poke-env's heuristic player) for a
choice at each decision, ~0.3 ms of worker CPU per step. Once the kickstarting weight is 0
for good (``algo.kickstart_steps > 0`` and ``max(kickstart_steps, bc_steps)`` env steps
done, see :func:`kickstart_weight`), :class:`TeacherSwitch` turns it off in every worker
(``envs.call("set_teacher_active", False)``): ``teacher_action`` stays in the observation
space, filled with -1. A resumed run past that point turns it off at start; workers
replaced after a crash start with it on and are turned off again after the next update,
as self-play re-pushes its pool to them.
"""

from __future__ import annotations

import logging
from typing import Any

from trainer.config import AlgoConfig
from trainer.envs.vector import new_replacements

log = logging.getLogger(__name__)


def kickstart_weight(algo: AlgoConfig, global_step: int) -> float:
    """The kickstarting weight at ``global_step``: ``kickstart_coef`` during the ``bc_steps``
    cloning phase, then decayed linearly from there to zero at ``kickstart_steps`` env steps
    (``0``: constant)."""
    if algo.kickstart_steps <= 0 or global_step < algo.bc_steps:
        return algo.kickstart_coef
    span = max(algo.kickstart_steps - algo.bc_steps, 1)
    return algo.kickstart_coef * max(1.0 - (global_step - algo.bc_steps) / span, 0.0)


class TeacherSwitch:
    """Whether the envs' teacher is on, and the one place that turns it off (module docs)."""

    def __init__(self, algo: AlgoConfig, envs: Any, has_teacher: bool) -> None:
        self.envs = envs
        self.active = has_teacher
        steps = algo.kickstart_steps
        self.off_from = max(steps, algo.bc_steps) if has_teacher and steps > 0 else None
        self.replaced_seen = new_replacements(envs, 0)[1]  # replacements already there

    def update(self, global_step: int) -> None:
        """Turn the teacher off once ``global_step`` reaches :attr:`off_from`, and again in
        workers replaced since the last call."""
        if self.off_from is None:
            return
        replaced, self.replaced_seen = new_replacements(self.envs, self.replaced_seen)
        if self.active and global_step >= self.off_from:
            self._switch_off()
            log.info("kickstarting over at step %d: the env workers' teacher is off", global_step)
        elif not self.active and replaced:
            self._switch_off()
            log.info("teacher turned off in the replaced env workers too")

    def _switch_off(self) -> None:
        states = self.envs.call("set_teacher_active", False)
        if any(states):
            raise RuntimeError(f"env teacher still on after switching it off: {states}")
        self.active = False
