"""Test helpers around the memory task (:mod:`mapleenv.memory`): its id, vector envs and
trainer overrides for fast runs."""

from __future__ import annotations

import gymnasium as gym
from hydra import compose, initialize_config_dir

from mapleenv import MEMORY_ENV_ID
from mapleenv.memory import MemoryEnv
from trainer.__main__ import CONF_DIR

__all__ = ["MEMORY_ENV_ID", "MEMORY_OVERRIDES", "MemoryEnv", "memory_vector_env"]


def register_memory_env() -> str:
    """The memory task's id (``import mapleenv`` registers it)."""
    return MEMORY_ENV_ID


def memory_vector_env(
    num_envs: int, autoreset_mode: str = "SameStep", **env_kwargs
) -> gym.vector.VectorEnv:
    """A SyncVectorEnv of :class:`MemoryEnv` with the given Gymnasium autoreset mode."""
    return gym.vector.SyncVectorEnv(
        [lambda: MemoryEnv(**env_kwargs) for _ in range(num_envs)],
        autoreset_mode=gym.vector.AutoresetMode(autoreset_mode),
    )


# Trainer overrides for fast runs on the memory task (sync vector env, tiny model).
MEMORY_OVERRIDES = [
    "env=gym",
    f"env.id={MEMORY_ENV_ID}",
    "env.num_envs=16",
    "device=cpu",
    "algo.rollout_steps=32",
    "algo.bptt=8",
    "algo.num_minibatches=4",
    "algo.epochs=4",
    "algo.lr=3e-3",
    "model.encoder_sizes=[32]",
    "model.hidden_size=32",
    "tensorboard=false",
    "log_every=1000",
]

FAST = ["env.num_envs=4", "algo.rollout_steps=16", "algo.epochs=1"]
ITER_STEPS = 4 * 16  # num_envs * rollout_steps


def memory_cfg(*overrides: str):
    register_memory_env()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("config", overrides=[*MEMORY_OVERRIDES, *FAST, *overrides])
