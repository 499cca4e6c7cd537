"""Rollout storage ``[T, N]``, GAE, and the chunked view sequence PPO trains on."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from mapleenv.policies import Hidden


def compute_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    last_value: torch.Tensor,
    gamma: float,
    gae_lambda: float,
    final_values: torch.Tensor | None = None,
    has_final_value: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE advantages and returns for ``[T, N]`` tensors.

    Step ``t``'s successor value is ``values[t + 1]`` (``last_value`` for the last step).
    ``terminated`` steps do not bootstrap. ``truncated`` steps bootstrap from the value of
    the true final observation: ``final_values[t]`` where ``has_final_value[t]`` (same-step
    autoreset), else the successor value (next-step autoreset, where the next row holds the
    final observation). The advantage recursion stops at every episode end.
    """
    steps = rewards.shape[0]
    terminated, truncated = terminated.float(), truncated.float()
    done = torch.maximum(terminated, truncated)
    next_values = torch.cat([values[1:], last_value[None]], dim=0)
    if final_values is not None and has_final_value is not None:
        next_values = torch.where(has_final_value.bool(), final_values, next_values)
    deltas = rewards + gamma * next_values * (1.0 - terminated) - values
    advantages = torch.zeros_like(values)
    running = torch.zeros_like(last_value)
    for t in reversed(range(steps)):
        running = deltas[t] + gamma * gae_lambda * (1.0 - done[t]) * running
        advantages[t] = running
    return advantages, advantages + values


@dataclass
class ChunkBatch:
    """Rollout data cut into chunks: tensors ``[L, C * N, ...]``, chunk ``j = c * N + n``."""

    obs: torch.Tensor
    action_mask: torch.Tensor
    episode_start: torch.Tensor
    actions: torch.Tensor
    logp: torch.Tensor
    values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    valid: torch.Tensor
    hidden: Hidden  # state at every chunk start, ``[layers, C * N, state]``
    teacher_actions: torch.Tensor  # the teacher's action per step, -1: none
    aux_targets: torch.Tensor  # the opponent's action class in the step's turn, -1: none
    teacher_probs: torch.Tensor  # ``[L, C * N, A]`` the search teacher's target, zeros: none

    @property
    def num_chunks(self) -> int:
        return self.episode_start.shape[1]


class RolloutBuffer:
    """Per-step storage for ``steps`` x ``num_envs`` transitions.

    Model inputs/outputs live on ``device``; rewards and flags from the envs are kept in
    NumPy and moved once per rollout. ``valid`` is 0 for steps that are not transitions of
    an episode (the step after a done under next-step autoreset); they are excluded from
    the loss but kept in the sequence so the replayed state matches the rollout.
    """

    def __init__(
        self,
        steps: int,
        num_envs: int,
        obs_dim: int,
        n_actions: int,
        bptt: int,
        hidden_shape: tuple[int, int] | None,
        device: torch.device,
    ) -> None:
        self.steps, self.num_envs, self.device = steps, num_envs, device
        self.bptt = bptt if bptt > 0 else steps
        self.num_chunk_rows = -(-steps // self.bptt)
        t, n = steps, num_envs
        self.obs = torch.zeros(t, n, obs_dim, device=device)
        self.action_mask = torch.zeros(t, n, n_actions, dtype=torch.bool, device=device)
        self.episode_start = torch.zeros(t, n, device=device)
        self.actions = torch.zeros(t, n, dtype=torch.long, device=device)
        self.teacher_actions = torch.full((t, n), -1, dtype=torch.long, device=device)
        self.teacher_probs = torch.zeros(t, n, n_actions, device=device)  # zeros: none
        self.aux_targets = torch.full((t, n), -1, dtype=torch.long, device=device)
        self.logp = torch.zeros(t, n, device=device)
        self.values = torch.zeros(t, n, device=device)
        self.final_values = torch.zeros(t, n, device=device)
        self.last_value = torch.zeros(n, device=device)
        self.rewards = np.zeros((t, n), dtype=np.float32)
        self.terminated = np.zeros((t, n), dtype=bool)
        self.truncated = np.zeros((t, n), dtype=bool)
        self.valid = np.ones((t, n), dtype=bool)
        self.has_final_value = np.zeros((t, n), dtype=bool)
        self.chunk_hidden: Hidden = ()
        if hidden_shape is not None:
            layers, size = hidden_shape
            self.chunk_hidden = tuple(
                torch.zeros(self.num_chunk_rows, layers, n, size, device=device) for _ in range(2)
            )
        self.advantages = torch.zeros(t, n, device=device)
        self.returns = torch.zeros(t, n, device=device)

    def is_chunk_start(self, t: int) -> bool:
        return t % self.bptt == 0

    def store_chunk_hidden(self, t: int, hidden: Hidden) -> None:
        """Keep the state entering step ``t`` (before episode-start masking)."""
        for dst, src in zip(self.chunk_hidden, hidden, strict=True):
            dst[t // self.bptt].copy_(src)

    def _flags(self, array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(array).to(self.device, dtype=torch.float32)

    def compute_returns(self, gamma: float, gae_lambda: float) -> None:
        """Fill ``advantages`` and ``returns`` (GAE); call after the rollout."""
        self.advantages, self.returns = compute_gae(
            self._flags(self.rewards),
            self.values,
            self._flags(self.terminated),
            self._flags(self.truncated),
            self.last_value,
            gamma,
            gae_lambda,
            self.final_values,
            self._flags(self.has_final_value),
        )
        valid = self._flags(self.valid)
        self.advantages *= valid
        self.returns = torch.where(valid.bool(), self.returns, self.values)

    def chunks(self) -> ChunkBatch:
        """The rollout as ``[L, C * N]`` chunks; the tail of the last chunk is padding."""
        length, rows, n = self.bptt, self.num_chunk_rows, self.num_envs
        pad = rows * length - self.steps
        valid = self._flags(self.valid)

        def cut(x: torch.Tensor, fill: float = 0.0) -> torch.Tensor:
            if pad:
                x = torch.cat([x, x.new_full((pad, *x.shape[1:]), fill)], dim=0)
            x = x.view(rows, length, n, *x.shape[2:]).transpose(0, 1)
            return x.reshape(length, rows * n, *x.shape[3:])

        hidden = tuple(
            h.permute(1, 0, 2, 3).reshape(h.shape[1], rows * n, h.shape[3])
            for h in self.chunk_hidden
        )
        return ChunkBatch(
            obs=cut(self.obs),
            action_mask=cut(self.action_mask, True),
            episode_start=cut(self.episode_start),
            actions=cut(self.actions),
            logp=cut(self.logp),
            values=cut(self.values),
            advantages=cut(self.advantages),
            returns=cut(self.returns),
            valid=cut(valid),
            hidden=hidden,
            teacher_actions=cut(self.teacher_actions, -1),
            aux_targets=cut(self.aux_targets, -1),
            teacher_probs=cut(self.teacher_probs),
        )
