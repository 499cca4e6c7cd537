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

import functools
import logging
import multiprocessing
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode

from mapleenv.backends import available_backends, backend_available
from mapleenv.env import PokemonEnv
from mapleenv.plugins import import_plugins
from mapleenv.reward import RewardConfig
from mapleenv.showdown.formats import check_format
from mapleenv.showdown.package import external_server
from mapleenv.showdown.process import die_with_parent
from mapleenv.showdown.server import ServerPool
from mapleenv.showdown.teams import read_teams
from mapleenv.vector.masks import action_masks

logger = logging.getLogger(__name__)

BACKEND_ENV_VAR = "MAPLE_BACKEND"
"""Environment variable naming the backend used when none is given (tests run both)."""


def _worker_env(**kwargs: Any) -> PokemonEnv:
    """Builds an env; in an env worker, first ties the worker's life to its parent's.

    ``AsyncVectorEnv`` also calls this in the parent process (for the spaces): there it
    must not set PDEATHSIG, or the trainer would die with the shell that started it."""
    if multiprocessing.parent_process() is not None:
        die_with_parent()
    return PokemonEnv(**kwargs)


def default_backend(server_url: str | None = None) -> str:
    """The backend for ``backend=None``/``"auto"``: ``server`` with an external
    ``server_url``, else ``$MAPLE_BACKEND`` or ``direct``."""
    if server_url is not None:
        return "server"
    return os.environ.get(BACKEND_ENV_VAR) or "direct"


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
    *,
    battle_format: str = "gen9randombattle",
    opponent: str = "random",
    servers: int = 1,
    server_url: str | None = None,
    log_dir: str | Path | None = None,
    encoder: str = "simple",
    reward: RewardConfig | Mapping[str, Any] | None = None,
    max_turns: int | None = None,
    backend: str | None = None,
    sim_hosts: int | None = None,
    context: str = "spawn",
    seed: int | None = None,
    autoreset_mode: AutoresetMode | str | None = None,
    watchdog_interval: float = 1.0,
    server_config: Mapping[str, Any] | None = None,
    **env_kwargs: Any,
) -> ShowdownVectorEnv:
    """``num_envs`` :class:`PokemonEnv` in ``AsyncVectorEnv`` workers (shared memory).

    ``server_url`` uses an external server instead of starting ``servers`` local ones
    (``server_config``: extra Showdown config values for those, see
    :data:`mapleenv.showdown.config.DEFAULT_CONFIG`); ``seed`` seeds env ``i`` with ``seed + i``;
    ``env_kwargs`` go to every
    :class:`PokemonEnv` (e.g. ``timeout``, ``plugins``, ``reward_fn``, ``backend_kwargs``,
    ``team`` and ``opponent_team``: team files or folders are read and validated here, once,
    and the workers get the packed teams; env ``i`` draws its teams with its own seed;
    ``plugins`` are imported here first too). ``backend``:
    ``None``/``"auto"`` (:func:`default_backend`), ``"server"``, ``"direct"`` (with
    ``sim_hosts`` shared hosts, see module docs) or a name given to
    ``mapleenv.backends.register_backend``.
    """
    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    if servers < 1:
        raise ValueError(f"servers must be >= 1, got {servers}")
    if sim_hosts is not None and sim_hosts < 0:
        raise ValueError(f"sim_hosts must be >= 0 or None, got {sim_hosts}")
    # here too, before the checks below: a plugin may register the backend
    import_plugins(env_kwargs.get("plugins") or ())
    if backend is None or backend == "auto":
        backend = default_backend(server_url)
    if server_url is not None and backend != "server":
        raise ValueError(f"server_url needs backend='server' (got backend={backend!r})")
    if server_url is None:  # before any worker starts (an external server has its own list)
        check_format(battle_format, has_team=env_kwargs.get("team") is not None)
    for key in ("team", "opponent_team"):  # read and validated once, here
        if isinstance(env_kwargs.get(key), str | Path):
            validate_for = battle_format if server_url is None else None
            env_kwargs[key] = read_teams(env_kwargs[key], validate_for, key=key)
    if not backend_available(backend):
        raise NotImplementedError(
            f"backend {backend!r} is not available (registered: "
            f"{', '.join(available_backends())}); see mapleenv.backends.register_backend"
        )
    reward_config = RewardConfig.from_value(reward)
    pool: _Pool | None = None
    configurations: list[Any] = [None] * num_envs
    if backend == "direct" and sim_hosts != 0:
        from mapleenv.backends.direct.pool import SimHostPool  # registers the backend too

        hosts = SimHostPool(min(sim_hosts or os.cpu_count() or 1, num_envs)).start()
        hosts.start_watchdog(watchdog_interval)
        pool = hosts
        env_kwargs["backend_kwargs"] = {
            **(env_kwargs.get("backend_kwargs") or {}),
            "host_pool": hosts.spec,
        }
    elif backend == "server":
        if server_url is not None:
            configurations = [external_server(server_url)] * num_envs
        else:
            pool = ServerPool(
                min(servers, num_envs), log_dir=log_dir, config=dict(server_config or {})
            )
            pool.start()
            pool.start_watchdog(watchdog_interval)
            configurations = [pool.configuration_for(i) for i in range(num_envs)]
    common = dict(
        battle_format=battle_format,
        opponent=opponent,
        encoder=encoder,
        reward=reward_config,
        log_dir=log_dir,
        max_turns=max_turns,
        backend=backend,
        **env_kwargs,
    )
    env_fns = [
        functools.partial(
            _worker_env, server=configurations[i], seed=None if seed is None else seed + i, **common
        )
        for i in range(num_envs)
    ]
    vector_kwargs: dict[str, Any] = {"shared_memory": True, "context": context}
    if autoreset_mode is not None:
        vector_kwargs["autoreset_mode"] = AutoresetMode(autoreset_mode)
    try:
        return ShowdownVectorEnv(env_fns, pool=pool, **vector_kwargs)
    except BaseException:
        if pool is not None:
            pool.stop()
        raise
