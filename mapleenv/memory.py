"""A tiny memory task for checking recurrent learners: recall a cue shown at the first step.

Observation ``[cue_0, cue_1, query]``: the cue is one-hot at step 0, then ``delay`` - 1 blank
steps, then the query step (``query = 1``). The action taken at the query step earns +1 if it
names the cue, else -1, and ends the episode; earlier actions do nothing. A memoryless
policy cannot beat an expected return of 0; one that remembers the cue gets 1. Registered
as ``mapleenv/Memory-v0`` (``gym.make("mapleenv/Memory-v0", delay=16)``).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class MemoryEnv(gym.Env):
    """Recall the cue after ``delay`` steps (episode length ``delay + 1``)."""

    def __init__(
        self, delay: int = 4, action_mask: bool = False, max_episode_steps: int | None = None
    ):
        self.delay = delay
        self.with_mask = action_mask
        self.max_episode_steps = max_episode_steps
        obs_box = spaces.Box(0.0, 1.0, shape=(3,), dtype=np.float32)
        self.action_space = spaces.Discrete(3 if action_mask else 2)
        if action_mask:
            # A third action exists but is always illegal: the policy must never pick it.
            self.observation_space = spaces.Dict(
                observation=obs_box, action_mask=spaces.Box(0, 1, shape=(3,), dtype=np.int8)
            )
        else:
            self.observation_space = obs_box
        self.cue = 0
        self.t = 0

    def _obs(self):
        obs = np.zeros(3, dtype=np.float32)
        if self.t == 0:
            obs[self.cue] = 1.0
        if self.t == self.delay:
            obs[2] = 1.0
        if self.with_mask:
            return {"observation": obs, "action_mask": np.array([1, 1, 0], dtype=np.int8)}
        return obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.cue = int(self.np_random.integers(2))
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        assert self.action_space.contains(action), action
        if self.with_mask and int(action) == 2:
            raise AssertionError("illegal action taken")
        if self.t == self.delay:
            reward = 1.0 if int(action) == self.cue else -1.0
            self.t += 1
            return self._obs(), reward, True, False, {"won": reward > 0}
        self.t += 1
        truncated = self.max_episode_steps is not None and self.t >= self.max_episode_steps
        return self._obs(), 0.0, False, truncated, {}
