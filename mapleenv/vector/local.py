"""Vectorized Showdown envs: ``AsyncVectorEnv`` workers sharing simulator processes.

Two backends (:func:`default_backend` picks one when none is given):

* ``direct`` (the default): the workers' battles run in ``sim_hosts`` Node simulator
  hosts started once in the parent (a :class:`~mapleenv.backends.direct.SimHostPool`, default one
  per core; ``sim_hosts=0``: a host per env), no Showdown server at all.
* ``server``: ``servers`` Showdown servers started once in the parent (a
  :class:`~mapleenv.showdown.ServerPool`), env ``i`` talks to server ``i % servers``; or an
  external server (``server_url``, which implies this backend).

Closing the vector env stops the hosts or servers.

Crashes: a watchdog thread in the parent restarts a dead server (or host) on the same
port (socket) (within ``watchdog_interval`` s), and kills a hung one (health pings) first.
The workers cannot restart it themselves; an env whose connection drops ends its episode
with ``truncated=True`` and ``info["aborted"]``, and its next ``reset`` (Gymnasium's
autoreset) waits for the port to accept connections again and reconnects with fresh
poke-env players.

Workers are spawned (``context="spawn"`` by default: ``fork`` hangs with poke-env's
event-loop threads) and import only ``mapleenv`` (no torch, no CUDA).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import multiprocessing
import os
from typing import Any, Protocol

import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode
from poke_env.ps_client.server_configuration import ServerConfiguration

from mapleenv.env import PokemonEnv
from mapleenv.plugins import import_plugins
from mapleenv.showdown.pool import ServerPool
from mapleenv.showdown.process import die_with_parent
from mapleenv.spec import BACKEND_ENV_VAR, EnvSpec, default_backend
from mapleenv.vector.masks import action_masks

logger = logging.getLogger(__name__)

__all__ = [
    "BACKEND_ENV_VAR",
    "ShowdownVectorEnv",
    "default_backend",
    "make_vector_env",
]


def _worker_env(spec: EnvSpec) -> PokemonEnv:
    """Builds an env from its (checked) spec; in an env worker, first ties the worker's
    life to its parent's.

    ``AsyncVectorEnv`` also calls this in the parent process (for the spaces): there it
    must not set PDEATHSIG, or the trainer would die with the shell that started it."""
    if multiprocessing.parent_process() is not None:
        die_with_parent()
    return PokemonEnv(spec=spec)


class _Pool(Protocol):
    @property
    def failure(self) -> str | None: ...

    def stop(self) -> None: ...


class ShowdownVectorEnv(AsyncVectorEnv):
    """``AsyncVectorEnv`` that also stops its server or host pool on ``close()``."""

    def __init__(self, env_fns: list[Any], *, pool: _Pool | None = None, **kwargs: Any):
        self.pool = pool
        try:
            super().__init__(env_fns, **kwargs)
        except BaseException:
            self._stop_pool()
            raise

    def action_masks(self) -> np.ndarray:
        """Bool ``[N, A]`` legal-action masks of the current observations
        (:func:`mapleenv.vector.masks.action_masks`)."""
        return action_masks(self)

    @property
    def pool_failure(self) -> str | None:
        """Why the server/host watchdog gave up restarting one (``None``: it has not, or
        there is no pool): the envs cannot recover, the caller should stop."""
        return self.pool.failure if getattr(self, "pool", None) is not None else None

    def _stop_pool(self) -> None:
        pool, self.pool = getattr(self, "pool", None), None
        if pool is not None:
            pool.stop()

    def close_extras(self, timeout: float | None = None, terminate: bool = False) -> None:
        try:
            if hasattr(self, "processes"):
                super().close_extras(timeout=timeout, terminate=terminate)
        finally:
            self._stop_pool()


def make_vector_env(
    num_envs: int,
    spec: EnvSpec | None = None,
    *,
    server_url: str | None = None,
    context: str = "spawn",
    autoreset_mode: AutoresetMode | str | None = None,
    watchdog_interval: float = 1.0,
    **settings: Any,
) -> ShowdownVectorEnv:
    """``num_envs`` :class:`PokemonEnv` in ``AsyncVectorEnv`` workers (shared memory).

    The envs' settings are one :class:`~mapleenv.spec.EnvSpec`: ``spec``, or built from
    ``settings`` (its fields: ``battle_format``, ``opponent``, ``encoder``, ``reward``,
    ``max_turns``, ``backend``, ``sim_hosts``, ``servers``, ``server_config``, ``seed``,
    ``team``, ``plugins``, ``timeout``...; with ``spec``, settings replace its values).
    It is checked here, once (format, teams: the workers get the packed teams and do not
    check again). ``server_url`` uses an external server (``spec.server``) instead of
    starting ``servers`` local ones; ``seed`` seeds env ``i`` with ``seed + i``.
    ``backend``: ``None``/``"auto"`` (:func:`default_backend`), ``"server"``, ``"direct"``
    (with ``sim_hosts`` shared hosts, see module docs) or a name given to
    ``mapleenv.backends.register_backend``.
    """
    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    if server_url is not None:
        settings["server"] = server_url
    spec = _checked_spec(spec, settings)
    pool, specs = _start_pool(spec, num_envs, watchdog_interval)
    env_fns = [functools.partial(_worker_env, env) for env in specs]
    vector_kwargs: dict[str, Any] = {"shared_memory": True, "context": context}
    if autoreset_mode is not None:
        vector_kwargs["autoreset_mode"] = AutoresetMode(autoreset_mode)
    try:
        return ShowdownVectorEnv(env_fns, pool=pool, **vector_kwargs)
    except BaseException:
        if pool is not None:
            pool.stop()
        raise


def _checked_spec(spec: EnvSpec | None, settings: dict[str, Any]) -> EnvSpec:
    """The run's spec (``spec`` with ``settings`` replaced, or built from them), checked;
    a given server must be an address the workers can reach."""
    if spec is None:
        spec = EnvSpec(**settings)
    elif settings:
        spec = dataclasses.replace(spec, **settings)
    if spec.server is not None and not isinstance(spec.server, ServerConfiguration):
        raise ValueError("make_vector_env: give the server as a URL (server_url=...)")
    import_plugins(spec.plugins)  # a checked spec from elsewhere (a Ray shard) too
    return spec.checked()


def _start_pool(
    spec: EnvSpec, num_envs: int, watchdog_interval: float
) -> tuple[_Pool | None, list[EnvSpec]]:
    """The shared simulator hosts or servers of the envs (started, watched), and each
    env's spec: its seed (``seed + i``) and its host pool or server."""
    seeds = [None if spec.seed is None else spec.seed + i for i in range(num_envs)]
    specs = [dataclasses.replace(spec, seed=seed) for seed in seeds]
    if spec.backend == "direct" and spec.sim_hosts != 0:
        from mapleenv.backends.direct.pool import SimHostPool  # registers the backend too

        hosts = SimHostPool(min(spec.sim_hosts or os.cpu_count() or 1, num_envs)).start()
        hosts.start_watchdog(watchdog_interval)
        backend_kwargs = {**spec.backend_kwargs, "host_pool": hosts.spec}
        return hosts, [dataclasses.replace(s, backend_kwargs=backend_kwargs) for s in specs]
    if spec.backend == "server" and spec.server is None:
        servers = ServerPool(
            min(spec.servers, num_envs), log_dir=spec.log_dir, config=dict(spec.server_config)
        )
        servers.start()
        servers.start_watchdog(watchdog_interval)
        return servers, [
            dataclasses.replace(s, server=servers.configuration_for(i)) for i, s in enumerate(specs)
        ]
    return None, specs
