"""The policy contract's ``forward`` in one place: step form or sequence form."""

from __future__ import annotations

import torch
from torch import nn

from mapleenv.policies.recurrent import Hidden


class StatelessPolicy(nn.Module):
    """Base of Maple's stateless policies: ``forward(obs, action_mask, hidden,
    episode_start) -> (logits, value, new_hidden)`` takes one step (``obs [B, D]``,
    ``episode_start [B]``) or a sequence (``obs [T, B, D]``, ``episode_start [T, B]``);
    subclasses implement the sequence form, :meth:`forward_sequence`."""

    def forward(
        self,
        obs: torch.Tensor,
        action_mask: torch.Tensor,
        hidden: Hidden,
        episode_start: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, Hidden]:
        """Masked logits, value and the new state (no module keeps state)."""
        if episode_start.dim() != 1:
            return self.forward_sequence(obs, action_mask, hidden, episode_start)
        logits, value, new_hidden = self.forward_sequence(
            obs[None], action_mask[None], hidden, episode_start[None]
        )
        return logits[0], value[0], new_hidden

    def forward_sequence(
        self,
        obs: torch.Tensor,
        action_mask: torch.Tensor,
        hidden: Hidden,
        episode_start: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, Hidden]:
        """``[T, B, ...]`` inputs -> logits ``[T, B, A]``, value ``[T, B]``, final state."""
        raise NotImplementedError

    def forward_sequence_aux(
        self,
        obs: torch.Tensor,
        action_mask: torch.Tensor,
        hidden: Hidden,
        episode_start: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, Hidden, torch.Tensor]:
        """:meth:`forward_sequence` plus the auxiliary head's logits ``[T, B, aux_classes]``
        from the same features (the learner's replay only; ``model.aux_classes > 0``)."""
        raise NotImplementedError(f"{type(self).__name__} has no auxiliary head")
