"""Action masks of a vector env: one bool row per env, as sb3-contrib's maskable algorithms
take them (their VecEnv convention is ``env_method("action_masks")``; this is the same for
Gymnasium vector envs of :class:`~mapleenv.env.PokemonEnv`, local or Ray)."""

from __future__ import annotations

from typing import Any

import numpy as np


def action_masks(envs: Any) -> np.ndarray:
    """Bool ``[N, A]`` masks of the legal actions for the envs' current observations
    (``obs["action_mask"]`` as bool): each sub-env's ``action_masks()``, via ``envs.call``."""
    return np.stack(envs.call("action_masks")).astype(bool, copy=False)
