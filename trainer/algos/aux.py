"""The auxiliary loss: cross-entropy of the policy's aux head toward the opponent's action.

With ``algo.aux_coef > 0`` PPO adds ``aux_coef * -log q(class)`` over the valid steps that
have a label (``ChunkBatch.aux_targets >= 0``): the head (``model.aux_classes``, read by
``forward_sequence_aux``) predicts, before a turn, the class of what the opponent does in it
(:mod:`mapleenv.opponent_action`). Its gradient shapes the shared features only; the policy
never reads the head. docs/training.md, "Auxiliary opponent-action head".
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def aux_terms(
    aux_logits: torch.Tensor, targets: torch.Tensor, valid: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean cross-entropy and accuracy of ``aux_logits [L, B, K]`` toward ``targets [L, B]``
    over the ``valid`` steps (``[L, B]`` 0/1) that have a label (``targets >= 0``)."""
    labelled = valid * (targets >= 0)
    count = labelled.sum().clamp(min=1.0)
    ce = F.cross_entropy(
        aux_logits.reshape(-1, aux_logits.shape[-1]),
        targets.clamp(min=0).reshape(-1),
        reduction="none",
    ).view_as(labelled)
    hits = (aux_logits.argmax(-1) == targets).float()
    return (ce * labelled).sum() / count, (hits * labelled).sum() / count
