"""Turn Gymnasium observations into the policy's ``(obs [N, D] float32, mask [N, A] bool)``.

Supported single-env observation spaces: ``Box`` (flattened), ``Discrete`` (one-hot) and
``Dict(observation=Box|Discrete, action_mask=Box)``, optionally with ``teacher_action``
(a teacher's action per step, ``-1`` for none; the kickstarting target), ``teacher_probs``
(a soft target ``[A]`` per step, zeros for none; the search term's) and
``opponent_action`` (a class per step, ``-1`` for none; the auxiliary head's target). The
action space must be ``Discrete``; without an ``action_mask`` every action is legal.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces


class ObsAdapter:
    """Converts batched (or single) observations of one observation space."""

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space) -> None:
        if not isinstance(action_space, spaces.Discrete):
            raise ValueError(f"the trainer needs a Discrete action space, got {action_space}")
        self.n_actions = int(action_space.n)
        self.has_mask = False
        self.has_teacher = False
        self.has_search_teacher = False  # teacher_probs: the search teacher's soft targets
        self.aux_classes = 0  # opponent_action classes (0: no such key)
        obs_space = observation_space
        if isinstance(observation_space, spaces.Dict):
            keys = set(observation_space.spaces)
            if (
                not {"observation", "action_mask"}
                <= keys
                <= {"observation", "action_mask", "teacher_action", "opponent_action"}
                | {"teacher_probs"}
            ):
                raise ValueError(
                    "a Dict observation space must have the keys 'observation' and "
                    "'action_mask' (and optionally 'teacher_action', 'teacher_probs', "
                    "'opponent_action'), "
                    f"got {sorted(keys)}"
                )
            self.has_teacher = "teacher_action" in keys
            self.has_search_teacher = "teacher_probs" in keys
            if "opponent_action" in keys:
                self.aux_classes = int(np.max(observation_space["opponent_action"].high)) + 1
            mask_space = observation_space["action_mask"]
            if mask_space.shape != (self.n_actions,):
                raise ValueError(
                    f"action_mask shape {mask_space.shape} does not match "
                    f"Discrete({self.n_actions})"
                )
            obs_space = observation_space["observation"]
            self.has_mask = True
        if isinstance(obs_space, spaces.Box):
            self.one_hot = 0
            self.obs_dim = int(np.prod(obs_space.shape))
        elif isinstance(obs_space, spaces.Discrete):
            self.one_hot = int(obs_space.n)
            self.obs_dim = self.one_hot
        else:
            raise ValueError(f"unsupported observation space {obs_space} (Box or Discrete)")

    def batch(self, obs: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(obs [N, D] float32, mask [N, A] bool)`` from a vector env's batched obs."""
        raw = obs["observation"] if self.has_mask else obs
        raw = np.asarray(raw)
        n = raw.shape[0]
        if self.one_hot:
            flat = np.zeros((n, self.one_hot), dtype=np.float32)
            flat[np.arange(n), raw.astype(np.int64).reshape(n)] = 1.0
        else:
            flat = raw.reshape(n, -1).astype(np.float32, copy=False)
        if self.has_mask:
            mask = np.asarray(obs["action_mask"]).astype(bool, copy=False)
        else:
            mask = np.ones((n, self.n_actions), dtype=bool)
        return flat, mask

    def teacher(self, obs: Any) -> np.ndarray | None:
        """The teacher's actions ``[N]`` int64 (-1: none), or None without a teacher."""
        if not self.has_teacher:
            return None
        return np.asarray(obs["teacher_action"]).reshape(-1).astype(np.int64, copy=False)

    def teacher_probs(self, obs: Any) -> np.ndarray | None:
        """The search teacher's targets ``[N, A]`` float32 (a zero row: none), or None."""
        if not self.has_search_teacher:
            return None
        probs = np.asarray(obs["teacher_probs"], dtype=np.float32)
        return probs.reshape(-1, self.n_actions)

    def aux_target(self, obs: Any) -> np.ndarray | None:
        """The opponent's action classes ``[N]`` int64 (-1: none), or None without them."""
        if not self.aux_classes:
            return None
        return np.asarray(obs["opponent_action"]).reshape(-1).astype(np.int64, copy=False)

    def single(self, obs: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(obs [D], mask [A])`` for one env's observation (e.g. a ``final_obs``)."""
        if self.has_mask:
            batched: Any = {k: np.asarray(v)[None] for k, v in obs.items()}
        else:
            batched = np.asarray(obs)[None]
        flat, mask = self.batch(batched)
        return flat[0], mask[0]
