"""Maple environment side: Showdown servers, battle env, encoders, reward, opponents.

``import mapleenv`` registers the Gymnasium ids ``mapleenv/Showdown-v0``
(:class:`mapleenv.env.PokemonEnv`) and ``mapleenv/Memory-v0`` (:mod:`mapleenv.memory`, a toy
memory task); ``mapleenv.parallel_env()`` is the two-agent PettingZoo env
(:mod:`mapleenv.multiagent`). Everything else is imported lazily, so importing
the package stays light (no torch, no poke-env until used).
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

from mapleenv.lazy import lazy_getattr

ENV_ID = "mapleenv/Showdown-v0"
MEMORY_ENV_ID = "mapleenv/Memory-v0"  # a toy memory task for checking recurrent learners

if ENV_ID not in registry:
    register(id=ENV_ID, entry_point="mapleenv.env:PokemonEnv", nondeterministic=True)
if MEMORY_ENV_ID not in registry:
    register(id=MEMORY_ENV_ID, entry_point="mapleenv.memory:MemoryEnv")

_LAZY = {
    "PokemonEnv": "mapleenv.env",
    "EnvSpec": "mapleenv.spec",
    "BattleAborted": "mapleenv.backends",
    "register_backend": "mapleenv.backends",
    "make_vector_env": "mapleenv.vector.local",
    "parallel_env": "mapleenv.multiagent",
    "ShowdownParallelEnv": "mapleenv.multiagent",
    "ShowdownVectorEnv": "mapleenv.vector.local",
    "ShowdownServer": "mapleenv.showdown",
    "ServerPool": "mapleenv.showdown",
    "external_server": "mapleenv.showdown",
    "find_showdown": "mapleenv.showdown",
    "ShowdownError": "mapleenv.showdown",
    "RewardConfig": "mapleenv.reward",
    "register_reward": "mapleenv.reward",
    "make_encoder": "mapleenv.encoders",
    "register_encoder": "mapleenv.encoders",
    "make_opponent": "mapleenv.opponents",
    "register_opponent": "mapleenv.opponents",
}

__all__ = ["ENV_ID", "MEMORY_ENV_ID", *_LAZY]


__getattr__ = lazy_getattr(__name__, _LAZY)
