"""Vectorized Showdown envs: local ``AsyncVectorEnv`` workers (:mod:`mapleenv.vector.local`)
or Ray actor shards (:mod:`mapleenv.vector.ray`); imported lazily (Ray only when used)."""

from __future__ import annotations

from mapleenv.lazy import lazy_getattr

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


__getattr__ = lazy_getattr(__name__, _LAZY)
