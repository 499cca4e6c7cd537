"""Reward normalization by a running estimate of the discounted return's scale.

Each env stream keeps its discounted return ``R <- gamma * R + r`` (reset when its episode
ends); the rewards the learner sees are ``r / sqrt(Var[R] + eps)``, with ``Var[R]`` tracked
over all streams by Gymnasium's ``RunningMeanStd``, then clipped. This is the return-based
scaling of SB3's ``VecNormalize`` and Gymnasium's ``NormalizeReward`` (Engstrom et al., 2020),
kept outside the env so that logged episode returns stay in the env's own units, and with
its statistics in the checkpoint so a resumed run continues with the same scale.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.wrappers.utils import RunningMeanStd


class RewardNormalizer:
    """Scales reward batches ``[N]`` of ``num_envs`` streams (module docs)."""

    def __init__(self, num_envs: int, gamma: float, clip: float = 10.0, epsilon: float = 1e-8):
        self.gamma, self.clip, self.epsilon = gamma, clip, epsilon
        self.stats = RunningMeanStd(shape=())
        self.returns = np.zeros(num_envs, dtype=np.float64)

    @property
    def scale(self) -> float:
        """The current divisor ``sqrt(Var[R] + eps)``."""
        return float(np.sqrt(self.stats.var + self.epsilon))

    def __call__(self, rewards: np.ndarray, done: np.ndarray) -> np.ndarray:
        """Normalized ``rewards``; ``done`` ends those streams' returns after this step."""
        self.returns = self.returns * self.gamma + rewards
        self.stats.update(self.returns)
        scaled = np.clip(rewards / self.scale, -self.clip, self.clip)
        self.returns[np.asarray(done, dtype=bool)] = 0.0
        return scaled.astype(np.float32)

    def state_dict(self) -> dict[str, Any]:
        return {
            "mean": float(self.stats.mean),
            "var": float(self.stats.var),
            "count": float(self.stats.count),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the statistics (the per-stream returns restart: envs start new episodes)."""
        self.stats.mean = np.float64(state["mean"])
        self.stats.var = np.float64(state["var"])
        self.stats.count = float(state["count"])
