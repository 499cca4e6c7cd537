"""Vectorized Showdown envs: local ``AsyncVectorEnv`` workers (:mod:`mapleenv.vector.local`)
or Ray actor shards (:mod:`mapleenv.vector.ray`); imported lazily (Ray only when used)."""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "BACKEND_ENV_VAR": "mapleenv.vector.local",
    "EnvPoolFailed": "mapleenv.vector.heal",
    "EnvWorkersFailing": "mapleenv.vector.heal",
    "ShowdownVectorEnv": "mapleenv.vector.local",
    "default_backend": "mapleenv.vector.local",
    "make_vector_env": "mapleenv.vector.local",
    "action_masks": "mapleenv.vector.masks",
    "RayVectorEnv": "mapleenv.vector.ray",
    "ShardFailedError": "mapleenv.vector.ray",
    "make_ray_vector_env": "mapleenv.vector.ray",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mapleenv.vector' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
