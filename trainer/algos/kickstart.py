"""The kickstarting terms both algorithms add: cross-entropy toward a teacher's actions.

Kickstarting (Schmitt et al., 2018) adds ``coef * -log pi(teacher action)`` over the steps
that have a teacher action (``teacher >= 0``); behaviour cloning is the same term with the
policy gradient switched off. The trainer schedules the weight (``algo.kickstart_coef``,
``bc_steps``, ``kickstart_steps``).
"""

from __future__ import annotations

import torch

from mapleenv.policies import log_prob_entropy


def teacher_log_prob(
    logits: torch.Tensor, action_mask: torch.Tensor, teacher: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``log pi(teacher action)`` (0 where there is none) and 1 where the most likely action
    is the teacher's."""
    logp, _ = log_prob_entropy(logits, action_mask, teacher.clamp(min=0))
    return torch.where(teacher >= 0, logp, 0.0), (logits.argmax(-1) == teacher).float()


def kickstart_terms(
    teacher_logp: torch.Tensor, teacher_agree: torch.Tensor, taught: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Kickstarting loss ``-mean log pi(teacher action)`` and the agreement with the teacher
    over the ``taught`` steps (valid steps that have a teacher action)."""
    count = taught.sum().clamp(min=1.0)
    return -(teacher_logp * taught).sum() / count, (teacher_agree * taught).sum() / count
