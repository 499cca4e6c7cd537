"""One Ray shard: :class:`ShardActor` owns a vector env (and its servers) on its node."""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import Callable
from typing import Any

from gymnasium.vector import VectorEnv

EnvFn = Callable[..., VectorEnv]
"""Builds one shard's vector env: called as `env_fn(num_envs=n, **env_kwargs)`."""


def make_showdown_vector_env(num_envs: int, **kwargs: Any) -> VectorEnv:
    """Default shard env: `mapleenv.make_vector_env` (imported inside the actor)."""
    from mapleenv import make_vector_env

    return make_vector_env(num_envs, **kwargs)


class ShardActor:
    """One shard, run as a Ray actor: owns a vector env (and its servers) on its node."""

    def __init__(self, shard: int, env_fn: EnvFn, num_envs: int, env_kwargs: dict[str, Any]):
        logging.basicConfig(level=logging.INFO)
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # env workers (spawned from here) never use CUDA
        self.shard = shard
        self.env = env_fn(num_envs=num_envs, **env_kwargs)
        if self.env.num_envs != num_envs:
            raise ValueError(f"env_fn built {self.env.num_envs} envs, expected {num_envs}")

    def describe(self) -> dict[str, Any]:
        """Where this shard runs and what it serves (spaces, metadata)."""
        import ray

        return {
            "node_ip": ray.util.get_node_ip_address(),
            "node_id": ray.get_runtime_context().get_node_id(),
            "pid": os.getpid(),
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "single_observation_space": self.env.single_observation_space,
            "single_action_space": self.env.single_action_space,
            "metadata": dict(self.env.metadata),
            "render_mode": self.env.render_mode,
        }

    def ping(self) -> None:
        """No-op: its round trip is the Ray cost of one call."""

    def reset(self, seed: int | list[int | None] | None, options: dict | None) -> tuple:
        return self.env.reset(seed=seed, options=options)

    def step(self, actions: Any) -> tuple:
        return self.env.step(actions)

    def call(self, name: str, args: tuple, kwargs: dict) -> tuple:
        return tuple(self.env.call(name, *args, **kwargs))

    def get_attr(self, name: str) -> tuple:
        return tuple(self.env.get_attr(name))

    def set_attr(self, name: str, values: list | tuple) -> None:
        self.env.set_attr(name, values)

    def close(self) -> None:
        """Closes the env (and its servers), then frees its multiprocessing objects now:
        Ray ends the actor's child processes (the resource tracker too) before Python's
        finalizers would run, which otherwise prints resource_tracker KeyErrors."""
        if self.env is not None:
            self.env.close()
            self.env = None
            gc.collect()
