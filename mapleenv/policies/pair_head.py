"""The doubles policy head: joint logits of two slots' actions, factorized per slot.

A doubles env acts in the joint space ``a = a1 * S + a2`` (``S`` sub-actions per active
slot, :func:`mapleenv.actions.doubles.slot_space_size`) with an exact joint mask. Instead of
one ``Linear(hidden, S * S)``, :class:`PairHead` gives each slot its own logits and adds a
low-rank interaction::

    logits[a1 * S + a2] = f1(h)[a1] + f2(h)[a2] + u1(h)[a1] . u2(h)[a2]   (rank r)

The result is still one ``[..., S * S]`` row, masked with the env's joint mask and
normalized over the legal pairs by the same softmax as every policy
(:mod:`mapleenv.policies.masking`): sampling and log-probs stay exact, pairs legal apart but
not together are simply masked, and the learner replays the log-probs the rollout sampled
under. Why not MultiDiscrete or an autoregressive head: docs/training.md ("Doubles: the pair head").
"""

from __future__ import annotations

import functools
import math

import torch
from torch import nn

from mapleenv.actions.doubles import slot_space_size
from mapleenv.policies.config import ActionHead

MAX_GEN = 9


@functools.cache
def _doubles_sizes() -> dict[int, int]:
    """Joint action-space size of doubles -> sub-actions per slot, over every generation."""
    return {slot_space_size(gen) ** 2: slot_space_size(gen) for gen in range(1, MAX_GEN + 1)}


def doubles_slots(n_actions: int) -> int:
    """``S`` if ``n_actions`` is a doubles env's joint space ``S * S``, else 0 (singles)."""
    return _doubles_sizes().get(int(n_actions), 0)


def resolve_action_head(action_head: str, n_actions: int) -> str:
    """``model.action_head`` made concrete: ``auto`` is ``pair`` on a doubles-sized action
    space and ``flat`` otherwise; ``pair`` needs a square ``n_actions`` (``S * S``)."""
    if action_head not in {head.value for head in ActionHead}:
        raise ValueError(
            f"model.action_head must be one of {'|'.join(ActionHead)}, got {action_head!r}"
        )
    if action_head == ActionHead.auto:
        return ActionHead.pair.value if doubles_slots(n_actions) else ActionHead.flat.value
    if action_head == ActionHead.pair and math.isqrt(n_actions) ** 2 != n_actions:
        raise ValueError(
            f"model.action_head=pair needs a joint action space of S*S actions, got {n_actions}"
        )
    return str(action_head)


class PairHead(nn.Module):
    """``[..., F]`` features -> joint logits ``[..., S * S]``: per-slot logits plus a
    rank-``rank`` pair term (``rank=0``: none).

    Initialized like the flat head (small per-slot logits: a near-uniform first policy); the
    pair term starts at exactly zero (``u2`` zero) while ``u1`` is not, so it still learns."""

    def __init__(self, in_dim: int, slots: int, rank: int) -> None:
        super().__init__()
        if slots < 1 or rank < 0:
            raise ValueError(f"PairHead needs slots >= 1 and rank >= 0, got {slots}, {rank}")
        self.slots, self.rank = slots, rank
        self.first = _linear(in_dim, slots, 0.01)
        self.second = _linear(in_dim, slots, 0.01)
        self.u1 = _linear(in_dim, slots * rank, 1.0) if rank else None
        self.u2 = _linear(in_dim, slots * rank, 0.0) if rank else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pair = None
        if self.u1 is not None and self.u2 is not None:
            pair = (self.u1(x), self.u2(x))
        return join_slots(self.first(x), self.second(x), pair)


def join_slots(
    first: torch.Tensor,
    second: torch.Tensor,
    pair: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """Two slots' logits ``[..., S]`` -> joint logits ``[..., S * S]``:
    ``first[a1] + second[a2] (+ u1[a1] . u2[a2])``, ``pair = (u1, u2)`` each ``[..., S * r]``."""
    s = first.shape[-1]
    lead = first.shape[:-1]
    joint = first.unsqueeze(-1) + second.unsqueeze(-2)  # [..., S, S]
    if pair is not None:
        u1, u2 = (u.view(*lead, s, -1) for u in pair)
        joint = joint + u1 @ u2.transpose(-1, -2)
    return joint.reshape(*lead, s * s)


def _linear(fan_in: int, fan_out: int, gain: float) -> nn.Linear:
    layer = nn.Linear(fan_in, fan_out)
    if gain:
        nn.init.orthogonal_(layer.weight, gain)
    else:
        nn.init.zeros_(layer.weight)
    nn.init.zeros_(layer.bias)
    return layer
