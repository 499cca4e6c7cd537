"""Masked action distributions: masking logits, sampling actions, log-probs and entropy."""

from __future__ import annotations

import torch


def mask_logits(logits: torch.Tensor, action_mask: torch.Tensor) -> torch.Tensor:
    """Give illegal actions the dtype's most negative finite logit (zero probability)."""
    return logits.masked_fill(~action_mask.bool(), torch.finfo(logits.dtype).min)


def sample_actions(
    logits: torch.Tensor, generator: torch.Generator | None = None, *, greedy: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """One action per row of masked ``logits`` (sampled, or the argmax with ``greedy``);
    returns ``(actions, log_probs)``. The one action-selection helper of the trainer."""
    log_probs = torch.log_softmax(logits, dim=-1)
    if greedy:
        actions = logits.argmax(-1)
    else:
        flat = log_probs.reshape(-1, log_probs.shape[-1])
        actions = torch.multinomial(flat.exp(), 1, generator=generator).view(log_probs.shape[:-1])
    return actions, log_probs.gather(-1, actions.unsqueeze(-1)).squeeze(-1)


def log_prob_entropy(
    logits: torch.Tensor, action_mask: torch.Tensor, actions: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probabilities of ``actions`` and the entropy over legal actions."""
    log_probs = torch.log_softmax(logits, dim=-1)
    probs = log_probs.exp()
    entropy = -torch.where(action_mask.bool(), probs * log_probs, 0.0).sum(-1)
    return log_probs.gather(-1, actions.unsqueeze(-1)).squeeze(-1), entropy
