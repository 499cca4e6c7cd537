"""The policy contract's sequence logic in one place: ``forward`` in step or sequence form, and
the sequence form itself (features, then heads, then the optional aux head)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from mapleenv.policies.recurrent import Hidden


class StatelessPolicy(nn.Module):
    """Base of Maple's stateless policies: ``forward(obs, action_mask, hidden,
    episode_start) -> (logits, value, new_hidden)`` takes one step (``obs [B, D]``,
    ``episode_start [B]``) or a sequence (``obs [T, B, D]``, ``episode_start [T, B]``).

    A subclass gives the network's parts: :meth:`_features` (the trunk over a sequence and
    the new state), :meth:`_heads` (masked logits and value from those features) and
    :meth:`_aux_logits` with an ``aux_head`` (``model.aux_classes > 0``); the sequence forms
    :meth:`forward_sequence` and :meth:`forward_sequence_aux` are written here, once.
    """

    aux_head: nn.Module | None  # set by the subclass: None without model.aux_classes

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
        features, new_hidden = self._features(obs, hidden, episode_start)
        logits, value = self._heads(features, action_mask)
        return logits, value, new_hidden

    def forward_sequence_aux(
        self,
        obs: torch.Tensor,
        action_mask: torch.Tensor,
        hidden: Hidden,
        episode_start: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, Hidden, torch.Tensor]:
        """:meth:`forward_sequence` plus the auxiliary head's logits ``[T, B, aux_classes]``
        from the same features (the learner's replay only; ``model.aux_classes > 0``)."""
        if self.aux_head is None:
            raise NotImplementedError(f"{type(self).__name__} has no auxiliary head")
        features, new_hidden = self._features(obs, hidden, episode_start)
        logits, value = self._heads(features, action_mask)
        aux = self._aux_logits(features).float()
        return logits, value, new_hidden, aux.view(*episode_start.shape, -1)

    def _features(
        self, obs: torch.Tensor, hidden: Hidden, episode_start: torch.Tensor
    ) -> tuple[Any, Hidden]:
        """The network's features of a ``[T, B, D]`` sequence (any form :meth:`_heads` reads)
        and the final state."""
        raise NotImplementedError

    def _heads(self, features: Any, action_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked logits ``[T, B, A]`` (float32) and value ``[T, B]`` (float32)."""
        raise NotImplementedError

    def _aux_logits(self, features: Any) -> torch.Tensor:
        """The aux head's logits, ``T * B`` rows of ``aux_classes`` in any leading shape."""
        raise NotImplementedError
