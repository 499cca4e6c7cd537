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
event-loop threads), import only ``mapleenv`` and see no GPU (:func:`hide_gpus`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import multiprocessing
import os
import random
from typing import Any, Protocol

import numpy as np
from gymnasium.error import AlreadyPendingCallError, NoAsyncCallError
from gymnasium.vector import AsyncVectorEnv, AutoresetMode
from gymnasium.vector.async_vector_env import AsyncState
from gymnasium.vector.utils import iterate
from poke_env.ps_client.server_configuration import ServerConfiguration

from mapleenv.env import PokemonEnv
from mapleenv.limits import check_capacity
from mapleenv.plugins import import_plugins
from mapleenv.showdown.pool import ServerPool
from mapleenv.showdown.process import die_with_parent
from mapleenv.spec import BACKEND_ENV_VAR, EnvSpec, default_backend, spec_of
from mapleenv.vector.group import GroupedVectorEnv, group_abort_reply, hide_gpus, worker_group
from mapleenv.vector.heal import HealingStep
from mapleenv.vector.masks import action_masks

logger = logging.getLogger(__name__)

__all__ = [
    "BACKEND_ENV_VAR",
    "ShowdownVectorEnv",
    "default_backend",
    "make_vector_env",
]


def _worker_env(spec: EnvSpec) -> PokemonEnv:
    """Builds an env from its checked spec, trusted (no check per worker); in an env
    worker, first ties the worker's life to its parent's and hides the GPUs from it
    (:func:`hide_gpus`).

    ``AsyncVectorEnv`` also calls this in the parent process (for the spaces): there it
    must not set PDEATHSIG, or the trainer would die with the shell that started it."""
    if multiprocessing.parent_process() is not None:
        die_with_parent()
        hide_gpus()
        if spec.seed is not None:  # poke-env's baseline players draw from Python's random:
            random.seed(spec.seed)  # seeded by the env's seed, an evaluation repeats itself
    assert spec.is_checked, "env workers get the run's checked spec"
    return PokemonEnv(spec=spec)


class _Pool(Protocol):
    @property
    def failure(self) -> str | None: ...

    def stop(self) -> None: ...


class ShowdownVectorEnv(AsyncVectorEnv):
    """``AsyncVectorEnv`` that replaces its dead or hung workers within a step
    (:mod:`mapleenv.vector.heal`: ``worker_timeout_s``, ``max_worker_failures``) and stops
    its server or host pool on ``close()``."""

    def __init__(
        self,
        env_fns: list[Any],
        *,
        pool: _Pool | None = None,
        worker_timeout_s: float | None = 300.0,
        max_worker_failures: int = 3,
        abort_reply: Any = None,
        **kwargs: Any,
    ):
        self.pool = pool
        try:
            super().__init__(env_fns, **kwargs)
        except BaseException:
            self._stop_pool()
            raise
        context = multiprocessing.get_context(kwargs.get("context"))
        self.healing = HealingStep(
            self, context, worker_timeout_s, max_worker_failures, abort_reply=abort_reply
        )

    def step_async(self, actions: np.ndarray) -> None:
        """As ``AsyncVectorEnv.step_async``, but a worker that died since the last step
        does not stop the others: the step's reply replaces it."""
        self._assert_is_running()
        if self._state != AsyncState.DEFAULT:
            raise AlreadyPendingCallError(
                f"step_async while waiting for {self._state.value}", str(self._state.value)
            )
        for pipe, action in zip(
            self.parent_pipes, iterate(self.action_space, actions), strict=True
        ):
            with contextlib.suppress(BrokenPipeError, ConnectionError, OSError):
                pipe.send(("step", action))
        self._state = AsyncState.WAITING_STEP

    def step_wait(self, timeout: float | None = None) -> Any:
        """The step's replies; failed workers replaced (``timeout`` is unused: the wait is
        per worker, ``worker_timeout_s``)."""
        self._assert_is_running()
        if self._state != AsyncState.WAITING_STEP:
            raise NoAsyncCallError("step_wait without step_async", AsyncState.WAITING_STEP.value)
        return self.healing.step_wait()

    @property
    def replaced_workers(self) -> list[int]:
        """Every worker replacement so far, by env index, oldest first. A caller that keeps
        state in the workers (a self-play pool, the teacher switch) sends it again to the
        ones it has not seen yet (it remembers how many it saw)."""
        return list(self.healing.replaced)

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

    def _end_workers(self) -> None:
        for process in self.processes:
            if process.is_alive():
                process.kill()
        for process in self.processes:
            process.join(10.0)

    def close_extras(self, timeout: float | None = None, terminate: bool = False) -> None:
        try:
            if hasattr(self, "processes"):
                # a pending step or a dead worker: no polite close over a broken pipe
                if self._state != AsyncState.DEFAULT or not all(
                    p.is_alive() for p in self.processes
                ):
                    self._state, terminate = AsyncState.DEFAULT, True
                try:
                    super().close_extras(timeout=timeout, terminate=terminate)
                except (EOFError, ConnectionError, OSError):  # a worker died meanwhile
                    self._end_workers()
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
    worker_timeout_s: float | None = 300.0,
    max_worker_failures: int = 3,
    allow_oversubscribe: bool = False,
    battles_per_worker: int = 1,
    **settings: Any,
) -> ShowdownVectorEnv | GroupedVectorEnv:
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
    ``mapleenv.backends.register_backend``. A worker that dies, or does not answer a step
    within ``worker_timeout_s`` (``None``: wait forever), is replaced within the step and its
    episode ends aborted; a worker failing ``max_worker_failures`` times in a row raises
    (:mod:`mapleenv.vector.heal`). More processes than the machine holds
    (:func:`mapleenv.limits.check_capacity`) fail at once unless ``allow_oversubscribe``.
    ``battles_per_worker`` (a divisor of ``num_envs``): battles per worker process
    (:mod:`mapleenv.vector.group`; 1: one ``PokemonEnv`` per worker).
    """
    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    per_worker = battles_per_worker
    if per_worker < 1 or num_envs % per_worker:
        raise ValueError(
            f"battles_per_worker must be >= 1 and divide num_envs={num_envs}, got {per_worker}"
        )
    if server_url is not None:
        settings["server"] = server_url
    spec = _checked_spec(spec, settings)
    if not allow_oversubscribe:
        _check_capacity(spec, num_envs, num_envs // per_worker)
    pool, specs = _start_pool(spec, num_envs, watchdog_interval)
    env_fns = [functools.partial(_worker_env, env) for env in specs]
    mode = AutoresetMode(autoreset_mode or AutoresetMode.NEXT_STEP)
    if per_worker > 1:
        env_fns = [
            functools.partial(worker_group, specs[w : w + per_worker], mode)
            for w in range(0, num_envs, per_worker)
        ]
    vector_kwargs: dict[str, Any] = {
        "shared_memory": True,
        "context": context,
        "worker_timeout_s": worker_timeout_s,
        "max_worker_failures": max_worker_failures,
    }
    if autoreset_mode is not None:
        vector_kwargs["autoreset_mode"] = mode
    if per_worker > 1:  # the groups reset their own battles
        vector_kwargs["autoreset_mode"] = AutoresetMode.DISABLED
        vector_kwargs["abort_reply"] = functools.partial(group_abort_reply, per_worker)
    try:
        envs = ShowdownVectorEnv(env_fns, pool=pool, **vector_kwargs)
    except BaseException:
        if pool is not None:
            pool.stop()
        raise
    return envs if per_worker == 1 else GroupedVectorEnv(envs, per_worker, mode)


def _checked_spec(spec: EnvSpec | None, settings: dict[str, Any]) -> EnvSpec:
    """The run's spec: a checked ``spec`` as it is; else ``spec`` with ``settings`` replaced,
    or built from them, checked here once. A given server must be an address the workers
    can reach."""
    if spec is None:
        spec = EnvSpec(**settings)
    elif settings:
        spec = dataclasses.replace(spec, **settings)
    if spec.server is not None and not isinstance(spec.server, ServerConfiguration):
        raise ValueError("make_vector_env: give the server as a URL (server_url=...)")
    import_plugins(spec.plugins)  # a checked spec from elsewhere (a Ray shard) too
    return spec_of(spec)  # a checked one (the trainer's, evaluation's) is trusted as it is


def _check_capacity(spec: EnvSpec, num_envs: int, workers: int) -> None:
    """The ``workers`` plus the hosts or servers :func:`_start_pool` would start, against
    what this machine holds."""
    sim_hosts = servers = 0
    if spec.backend == "direct" and spec.sim_hosts != 0:
        sim_hosts = min(spec.sim_hosts or os.cpu_count() or 1, num_envs)
    elif spec.backend == "server" and spec.server is None:
        servers = min(spec.servers, num_envs)
    check_capacity(workers, servers=servers, sim_hosts=sim_hosts)


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
