"""Collect rollouts from a vector env with one batched policy and per-env recurrent state.

The collector owns the state ``(h, c)`` ``[layers, N, state]`` on the device; the policy
zeroes it for envs whose ``episode_start`` is set. Each step makes one batched forward,
sends the observations to the device once and brings only the actions back.

The envs must autoreset in the ``SAME_STEP`` mode (what :mod:`trainer.envs.vector` builds): the obs
after a done is already the reset obs; a truncated episode bootstraps from ``V(final_obs)``
evaluated with the state *after* the final step (one extra batched forward of the truncated
envs only).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from gymnasium.vector import AutoresetMode, VectorEnv

from mapleenv.policies import ActorCritic, sample_actions
from trainer.algos.buffer import RolloutBuffer
from trainer.envs.episodes import finished_values
from trainer.envs.spaces import ObsAdapter
from trainer.envs.vector import autoreset_mode

log = logging.getLogger(__name__)


@dataclass
class EpisodeStats:
    """Episodes finished during one rollout."""

    returns: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    wins: list[bool] = field(default_factory=list)  # only episodes whose info had ``won``
    aborted: int = 0  # episodes ended by a lost simulator/server (``info["aborted"]``)


def aux_after_step(aux: np.ndarray, done: np.ndarray, info: dict[str, Any]) -> np.ndarray:
    """Step ``t``'s auxiliary targets: the ``opponent_action`` of the observation after it
    (the turn's result); at a done step, that of the episode's final observation (in
    ``info["final_obs"]`` under same-step autoreset), -1 without one or for an aborted
    battle (its final observation is the one before)."""
    done_idx = np.flatnonzero(done)
    if not len(done_idx):
        return aux
    aux = aux.copy()
    final_obs = info.get("final_obs")
    aborted = finished_values(info, done, "aborted")
    for i in done_idx:
        final = final_obs[i] if final_obs is not None else None
        keep = isinstance(final, dict) and "opponent_action" in final and i not in aborted
        aux[i] = int(np.asarray(final["opponent_action"]).reshape(-1)[0]) if keep else -1
    return aux


class RolloutCollector:
    """Steps ``envs`` with ``policy`` and fills a :class:`RolloutBuffer`."""

    def __init__(
        self,
        envs: VectorEnv,
        policy: ActorCritic,
        adapter: ObsAdapter,
        device: torch.device,
        seed: int | None = None,
        reward_transform: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    ) -> None:
        """``reward_transform(rewards, done)`` (e.g. :class:`trainer.algos.reward_norm.
        RewardNormalizer`) maps the rewards stored for learning; episode statistics keep
        the env's own rewards."""
        self.envs, self.policy, self.adapter, self.device = envs, policy, adapter, device
        self.reward_transform = reward_transform
        self.num_envs = envs.num_envs
        self.mode = autoreset_mode(envs)
        if self.mode != AutoresetMode.SAME_STEP:
            raise ValueError(
                f"the rollout needs SAME_STEP autoreset envs, got {self.mode.name} "
                "(gymnasium.vector.*VectorEnv(..., autoreset_mode=AutoresetMode.SAME_STEP))"
            )
        obs, _ = envs.reset(seed=seed)
        self.obs_np, self.mask_np = adapter.batch(obs)
        self.teacher_np = adapter.teacher(obs)
        self.teacher_probs_np = adapter.teacher_probs(obs)
        self.hidden = policy.initial_state(self.num_envs, device)
        self.episode_start_np = np.ones(self.num_envs, dtype=bool)
        self.ep_return = np.zeros(self.num_envs, dtype=np.float64)
        self.ep_length = np.zeros(self.num_envs, dtype=np.int64)
        pin = device.type == "cuda"
        self._obs_host = torch.empty(self.num_envs, adapter.obs_dim, pin_memory=pin)
        self._mask_host = torch.empty(
            self.num_envs, adapter.n_actions, dtype=torch.bool, pin_memory=pin
        )
        self._start_host = torch.empty(self.num_envs, pin_memory=pin)
        self._obs_last = torch.empty(self.num_envs, adapter.obs_dim, device=device)
        self._mask_last = torch.empty(
            self.num_envs, adapter.n_actions, dtype=torch.bool, device=device
        )
        log.info("rollout: %d envs, autoreset mode %s", self.num_envs, self.mode.name)

    def restart_from(self, obs: Any) -> None:
        """Continue from ``obs`` after the envs were stepped by someone else (e.g. a
        benchmark): every env counts as starting an episode, with a zero state."""
        self.obs_np, self.mask_np = self.adapter.batch(obs)
        self.teacher_np = self.adapter.teacher(obs)
        self.teacher_probs_np = self.adapter.teacher_probs(obs)
        self.episode_start_np[:] = True
        self.ep_return[:] = 0.0
        self.ep_length[:] = 0

    def _upload(self, obs_dst: torch.Tensor, mask_dst: torch.Tensor) -> torch.Tensor:
        """Copy the current obs/mask into device tensors; returns episode_start on device."""
        self._obs_host.numpy()[:] = self.obs_np
        self._mask_host.numpy()[:] = self.mask_np
        self._start_host.numpy()[:] = self.episode_start_np
        obs_dst.copy_(self._obs_host, non_blocking=True)
        mask_dst.copy_(self._mask_host, non_blocking=True)
        return self._start_host.to(self.device, non_blocking=True)

    @torch.no_grad()
    def collect(self, buffer: RolloutBuffer) -> EpisodeStats:
        """Run ``buffer.steps`` vector steps into ``buffer`` and compute its last value."""
        stats = EpisodeStats()
        for t in range(buffer.steps):
            start = self._upload(buffer.obs[t], buffer.action_mask[t])
            buffer.episode_start[t] = start
            if self.teacher_np is not None:
                buffer.teacher_actions[t] = torch.from_numpy(self.teacher_np)
            if self.teacher_probs_np is not None:
                buffer.teacher_probs[t] = torch.from_numpy(self.teacher_probs_np)
            if buffer.is_chunk_start(t):
                buffer.store_chunk_hidden(t, self.hidden)
            logits, value, new_hidden = self.policy(
                buffer.obs[t], buffer.action_mask[t], self.hidden, start
            )
            actions, logp = sample_actions(logits)
            buffer.actions[t], buffer.logp[t], buffer.values[t] = actions, logp, value
            actions_np = actions.cpu().numpy()

            obs, rewards, terminated, truncated, info = self.envs.step(actions_np)
            done = terminated | truncated
            buffer.rewards[t] = (
                rewards if self.reward_transform is None else self.reward_transform(rewards, done)
            )
            buffer.terminated[t], buffer.truncated[t] = terminated, truncated
            buffer.valid[t] = True
            buffer.has_final_value[t] = False
            if (truncated & ~terminated).any():
                self._bootstrap_truncated(buffer, t, truncated & ~terminated, info, new_hidden)
            self._track_episodes(stats, rewards, done, info)
            aux = self.adapter.aux_target(obs)
            if aux is not None:
                buffer.aux_targets[t] = torch.from_numpy(aux_after_step(aux, done, info))

            self.obs_np, self.mask_np = self.adapter.batch(obs)
            self.teacher_np = self.adapter.teacher(obs)
            self.teacher_probs_np = self.adapter.teacher_probs(obs)
            self.hidden = new_hidden
            self.episode_start_np = done.copy()

        # Value of the observation after the last step (the state is not advanced).
        start = self._upload(self._obs_last, self._mask_last)
        _, value, _ = self.policy(self._obs_last, self._mask_last, self.hidden, start)
        buffer.last_value.copy_(value)
        return stats

    def _bootstrap_truncated(
        self,
        buffer: RolloutBuffer,
        t: int,
        truncated: np.ndarray,
        info: dict[str, Any],
        new_hidden: tuple[torch.Tensor, ...],
    ) -> None:
        """Store ``V(final_obs)`` for truncated envs, from the state after their last step."""
        final_obs = info.get("final_obs")
        idx = np.flatnonzero(truncated)
        if final_obs is None:
            log.warning("truncated episode without final_obs; bootstrapping from the next value")
            return
        pairs = [self.adapter.single(final_obs[i]) for i in idx]
        obs = torch.from_numpy(np.stack([p[0] for p in pairs])).to(self.device)
        mask = torch.from_numpy(np.stack([p[1] for p in pairs])).to(self.device)
        idx_t = torch.from_numpy(idx).to(self.device)
        hidden = tuple(h[:, idx_t] for h in new_hidden)
        _, value, _ = self.policy(obs, mask, hidden, torch.zeros(len(idx), device=self.device))
        buffer.final_values[t, idx_t] = value
        buffer.has_final_value[t, idx] = True

    def _track_episodes(
        self, stats: EpisodeStats, rewards: np.ndarray, done: np.ndarray, info: dict[str, Any]
    ) -> None:
        self.ep_return += rewards
        self.ep_length += 1
        wins = finished_values(info, done, "won")
        stats.aborted += len(finished_values(info, done, "aborted"))
        for i in np.flatnonzero(done):
            stats.returns.append(float(self.ep_return[i]))
            stats.lengths.append(int(self.ep_length[i]))
            if i in wins:
                stats.wins.append(bool(wins[i]))
        self.ep_return[done] = 0.0
        self.ep_length[done] = 0
