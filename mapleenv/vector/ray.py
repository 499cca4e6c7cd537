"""Ray-sharded Gymnasium vector env: one run's envs split over Ray actors on many nodes.

`RayVectorEnv` is a `gymnasium.vector.VectorEnv`: the trainer steps it like the local
`AsyncVectorEnv`, so the algorithm, the batched policy and all recurrent state stay in the
learner process. Each shard is a `ShardActor` (a Ray actor) that owns its own vector env
(by default `mapleenv.make_vector_env`, with its own Showdown server(s) on the node where
the actor runs, started and stopped by the actor: servers never cross machines). Per step
the learner sends every shard its slice of the actions, waits for all of them at once and
concatenates the numpy results. Only numpy arrays and plain Python objects cross the wire.

Failure policy: a shard that dies (actor or node lost) or raises is reported as
`ShardFailedError` (shard index, env range, node IP, cause). The run stops there; the
trainer saves its checkpoint on the way out and `resume=` continues it. Shards are not
restarted in place: a fresh shard would start new battles mid-rollout under the learner's
stale recurrent state.

`ray` is imported only when a `RayVectorEnv` is built, so the single-machine path never
needs it (`pip install -e ".[ray]"` installs it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space

from mapleenv.spec import EnvSpec, spec_of
from mapleenv.vector.batching import concatenate_batches, merge_infos, slice_batch, split_envs
from mapleenv.vector.masks import action_masks
from mapleenv.vector.shard import EnvFn, ShardActor, make_showdown_vector_env

log = logging.getLogger(__name__)

_SETTLE_S = 30.0  # after one shard fails, how long the others get to finish their call
_CLOSE_TIMEOUT_S = 60.0  # for all shards to close their envs before they are killed


class ShardFailedError(RuntimeError):
    """A Ray shard died or raised; names the shard, its envs, its node and the cause."""

    def __init__(self, shard: int, envs: range, node_ip: str, cause: str) -> None:
        self.shard = shard
        self.envs = envs
        self.node_ip = node_ip
        self.cause = cause
        super().__init__(
            f"Ray shard {shard} (envs {envs.start}..{envs.stop - 1}) on node {node_ip} "
            f"failed: {cause}"
        )


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ImportError(
            "env.vectorization=ray needs Ray: install Maple's extra with "
            "`pip install -e '.[ray]'` (or `EXTRAS=dev,ray make setup`)"
        ) from exc
    return ray


class RayVectorEnv(VectorEnv):
    """A Gymnasium vector env whose envs live in `shards` Ray actors, stepped in parallel.

    Args:
        num_envs: total envs, split into contiguous ranges over the shards.
        shards: number of `ShardActor`s.
        env_fn: builds one shard's vector env, `env_fn(num_envs=n, **env_kwargs)`; must be
            importable on every node (default: `mapleenv.make_vector_env`).
        env_kwargs: keyword arguments for `env_fn`. `seed` is offset by the shard's first
            env index and `log_dir` gets a `shard<k>` subfolder, so shards do not collide.
        cpus_per_shard: Ray CPUs reserved per actor (its env workers and servers run
            inside that reservation; Ray does not pin them).
        actor_options: extra `ActorClass.options(...)` (default: SPREAD scheduling).
        step_timeout_s: a shard slower than this in one call counts as failed (None: wait).
        start_timeout_s: shards not started by then (e.g. waiting for free CPUs) fail.

    Autoreset follows the shards' own mode (NEXT_STEP for `AsyncVectorEnv`), unchanged.
    """

    def __init__(
        self,
        num_envs: int,
        shards: int,
        *,
        env_fn: EnvFn | None = None,
        env_kwargs: dict[str, Any] | None = None,
        cpus_per_shard: float = 1,
        actor_options: dict[str, Any] | None = None,
        step_timeout_s: float | None = None,
        start_timeout_s: float | None = 600,
    ) -> None:
        ray = _import_ray()
        if not ray.is_initialized():
            raise RuntimeError("Ray is not initialised: call ray.init() or use make_ray_vector_env")
        self._ray = ray
        self.num_envs = num_envs
        self.ranges = split_envs(num_envs, shards)
        self.step_timeout_s = step_timeout_s
        self.closed = False
        self._actors: list[Any] = []
        self._pending: list[Any] | None = None
        env_fn = env_fn or make_showdown_vector_env
        options = {"scheduling_strategy": "SPREAD", **(actor_options or {})}
        remote_cls = ray.remote(ShardActor)
        self.node_ips = ["unknown (starting)"] * shards
        _warn_if_cluster_too_small(ray, shards * cpus_per_shard)
        try:
            for k, envs in enumerate(self.ranges):
                actor = remote_cls.options(num_cpus=cpus_per_shard, **options).remote(
                    k, env_fn, len(envs), _shard_kwargs(env_kwargs or {}, k, envs)
                )
                self._actors.append(actor)
            described = self._gather(
                [a.describe.remote() for a in self._actors], "start", start_timeout_s
            )
        except BaseException:
            self.close()
            raise
        self.node_ips = [d["node_ip"] for d in described]
        self.node_ids = [d["node_id"] for d in described]
        first = described[0]
        for k, d in enumerate(described[1:], start=1):
            if d["single_observation_space"] != first["single_observation_space"] or (
                d["single_action_space"] != first["single_action_space"]
            ):
                self.close()
                raise ValueError(f"shard {k} has different spaces from shard 0")
            if d["metadata"].get("autoreset_mode") != first["metadata"].get("autoreset_mode"):
                self.close()
                raise ValueError(f"shard {k} has a different autoreset mode from shard 0")
        self.single_observation_space = first["single_observation_space"]
        self.single_action_space = first["single_action_space"]
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.metadata = first["metadata"]
        self.render_mode = first["render_mode"]
        log.info(
            "RayVectorEnv: %d envs in %d shards on %d node(s): %s",
            num_envs,
            shards,
            len(set(self.node_ids)),
            ", ".join(f"shard {k}@{ip}" for k, ip in enumerate(self.node_ips)),
        )

    @property
    def shards(self) -> int:
        return len(self.ranges)

    @property
    def actors(self) -> list[Any]:
        """The shard actor handles (for inspection or failure tests)."""
        return list(self._actors)

    def reset(
        self,
        *,
        seed: int | list[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Resets every shard; an int seed gives env i the seed `seed + i`, as locally."""
        super().reset(seed=seed)
        if isinstance(seed, int):
            seeds: list[Any] = [seed + envs.start for envs in self.ranges]
        elif seed is None:
            seeds = [None] * self.shards
        else:
            if len(seed) != self.num_envs:
                raise ValueError(f"got {len(seed)} seeds for {self.num_envs} envs")
            seeds = [list(seed[envs.start : envs.stop]) for envs in self.ranges]
        refs = [a.reset.remote(s, options) for a, s in zip(self._actors, seeds, strict=True)]
        results = self._gather(refs, "reset", self.step_timeout_s)
        obs = concatenate_batches([r[0] for r in results])
        return obs, merge_infos([r[1] for r in results], self.ranges)

    def step_async(self, actions: Any) -> None:
        """Sends every shard its slice of `actions` (returns at once)."""
        if self._pending is not None:
            raise RuntimeError("step_async called twice without step_wait")
        self._pending = [
            a.step.remote(slice_batch(actions, envs))
            for a, envs in zip(self._actors, self.ranges, strict=True)
        ]

    def step_wait(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Waits for all shards and concatenates their results."""
        if self._pending is None:
            raise RuntimeError("step_wait called without step_async")
        refs, self._pending = self._pending, None
        results = self._gather(refs, "step", self.step_timeout_s)
        obs = concatenate_batches([r[0] for r in results])
        rewards = np.concatenate([r[1] for r in results])
        terminated = np.concatenate([r[2] for r in results])
        truncated = np.concatenate([r[3] for r in results])
        return (
            obs,
            rewards,
            terminated,
            truncated,
            merge_infos([r[4] for r in results], self.ranges),
        )

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        self.step_async(actions)
        return self.step_wait()

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Calls `name` on every sub-env; results in env order, as `AsyncVectorEnv.call`."""
        refs = [a.call.remote(name, args, kwargs) for a in self._actors]
        results = self._gather(refs, "call", self.step_timeout_s)
        return tuple(item for part in results for item in part)

    def action_masks(self) -> np.ndarray:
        """Bool ``[N, A]`` legal-action masks (:func:`mapleenv.vector.masks.action_masks`)."""
        return action_masks(self)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        refs = [a.get_attr.remote(name) for a in self._actors]
        results = self._gather(refs, "get_attr", self.step_timeout_s)
        return tuple(item for part in results for item in part)

    def set_attr(self, name: str, values: Any) -> None:
        if not isinstance(values, list | tuple):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(f"got {len(values)} values for {self.num_envs} envs")
        refs = [
            a.set_attr.remote(name, list(values[envs.start : envs.stop]))
            for a, envs in zip(self._actors, self.ranges, strict=True)
        ]
        self._gather(refs, "set_attr", self.step_timeout_s)

    def close_extras(self, **kwargs: Any) -> None:
        """Closes every shard (stopping its servers), then ends the actors; never raises."""
        ray, actors = self._ray, self._actors
        self._actors, self._pending = [], None
        if not actors or not ray.is_initialized():
            return
        refs = [a.close.remote() for a in actors]
        deadline = time.monotonic() + _CLOSE_TIMEOUT_S
        for k, ref in enumerate(refs):
            try:
                ray.get(ref, timeout=max(0.0, deadline - time.monotonic()))
            except Exception as exc:  # a dead or hung shard: ray.kill below ends it
                cause = _describe_cause(ray, exc, _CLOSE_TIMEOUT_S)
                log.warning("closing Ray shard %d: %s", k, cause)
        for actor in actors:
            with contextlib.suppress(Exception):  # already gone
                ray.kill(actor)

    def _gather(self, refs: list[Any], what: str, timeout: float | None) -> list[Any]:
        """`ray.get` of one call per shard (None: no timeout); a failure becomes
        `ShardFailedError` naming the first shard that raised, died or did not answer."""
        ray = self._ray
        try:
            return ray.get(refs, timeout=timeout)
        except (ray.exceptions.RayError, TimeoutError) as exc:
            first = exc
        timed_out = isinstance(first, ray.exceptions.GetTimeoutError | TimeoutError)
        # let the other shards settle (bounded), then name the first one that failed
        settle = 0 if timed_out else min(timeout or _SETTLE_S, _SETTLE_S)
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=settle)
        ready_ids = {ref.hex() for ref in ready}
        for k, ref in enumerate(refs):
            if ref.hex() in ready_ids:
                try:
                    ray.get(ref)
                except ray.exceptions.RayError as exc:
                    self._fail(k, f"{what}: {_describe_cause(ray, exc)}", exc)
        for k, ref in enumerate(refs):
            if ref.hex() not in ready_ids:
                wait = timeout if timed_out else settle
                self._fail(k, f"{what}: {_describe_cause(ray, first, wait)}", first)
        raise first  # pragma: no cover - every path above names a shard

    def _fail(self, shard: int, cause: str, exc: BaseException) -> None:
        raise ShardFailedError(shard, self.ranges[shard], self.node_ips[shard], cause) from exc

    def __repr__(self) -> str:
        return f"RayVectorEnv(num_envs={self.num_envs}, shards={len(self.ranges)})"


def _warn_if_cluster_too_small(ray: Any, cpus_needed: float) -> None:
    total = ray.cluster_resources().get("CPU", 0)
    if total < cpus_needed:
        log.warning(
            "the shards need %g CPUs but the Ray cluster has %g: they wait for nodes to join "
            "(lower env.ray.cpus_per_shard or add nodes)",
            cpus_needed,
            total,
        )


def _describe_cause(ray: Any, exc: BaseException, timeout: float | None = None) -> str:
    if isinstance(exc, ray.exceptions.GetTimeoutError | TimeoutError):
        return f"timed out (no answer within {timeout or 0:g} s)"
    if isinstance(exc, ray.exceptions.RayActorError):
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        if "creation task" in str(exc) and len(lines) > 1:  # keep the raised error, last
            return f"actor died ({type(exc).__name__}): failed to start: {lines[-1]}"
        detail = " ".join(" ".join(lines).split())
        return f"actor died ({type(exc).__name__}): {detail[:600]}"
    if isinstance(exc, ray.exceptions.RayTaskError):
        cause = exc.cause if getattr(exc, "cause", None) is not None else exc
        return f"exception in shard: {type(cause).__name__}: {cause}"
    return f"{type(exc).__name__}: {exc}"


def _shard_kwargs(env_kwargs: dict[str, Any], shard: int, envs: range) -> dict[str, Any]:
    """One shard's ``env_fn`` keywords: ``seed`` offset by its first env, ``log_dir`` in a
    ``shard<k>`` subfolder (in the :class:`EnvSpec` under ``spec`` too)."""
    kwargs = dict(env_kwargs)
    if kwargs.get("seed") is not None:
        kwargs["seed"] = int(kwargs["seed"]) + envs.start
    if kwargs.get("log_dir") is not None:
        kwargs["log_dir"] = str(Path(kwargs["log_dir"]).absolute() / f"shard{shard}")
    spec = kwargs.get("spec")
    if isinstance(spec, EnvSpec):
        seed = None if spec.seed is None else spec.seed + envs.start
        log_dir = None if spec.log_dir is None else Path(spec.log_dir).absolute() / f"shard{shard}"
        kwargs["spec"] = dataclasses.replace(spec, seed=seed, log_dir=log_dir)
    return kwargs


def shard_spec(spec: EnvSpec, cpus_per_shard: float) -> EnvSpec:
    """``spec`` checked (once, on this machine; a checked one is trusted) as the shards get
    it: ``sim_hosts=None`` becomes one simulator host per CPU of a shard (a shard's envs
    share its ``cpus_per_shard``, not every core of the node it lands on)."""
    spec = spec_of(spec)
    if spec.sim_hosts is None:
        spec = dataclasses.replace(spec, sim_hosts=max(1, round(cpus_per_shard)))
    return spec


def make_ray_vector_env(
    num_envs: int,
    shards: int,
    cpus_per_shard: float = 1,
    address: str | None = None,
    *,
    env_fn: EnvFn | None = None,
    actor_options: dict[str, Any] | None = None,
    step_timeout_s: float | None = None,
    start_timeout_s: float | None = 600,
    **make_vector_env_kwargs: Any,
) -> RayVectorEnv:
    """Connects to Ray unless already initialised, then builds a `RayVectorEnv` whose
    shards call `env_fn` (default `mapleenv.make_vector_env`) with `make_vector_env_kwargs`.

    `address`: None starts a private local Ray instance (no dashboard, at least
    `shards * cpus_per_shard` logical CPUs); `"auto"` joins the cluster this machine belongs
    to (`ray start`); `"HOST:6379"` joins that cluster; `"ray://HOST:10001"` uses Ray Client.
    Inside a Ray task (e.g. a job of Hydra's Ray launcher) the existing connection is used.
    An :class:`EnvSpec` given as ``spec=`` is checked here, once (team files are read on
    this machine), and each shard gets it with its own seed and log folder; its
    ``sim_hosts=None`` becomes one simulator host per CPU of a shard (a shard's envs share
    its ``cpus_per_shard``, not every core of the node).
    """
    spec = make_vector_env_kwargs.get("spec")
    if isinstance(spec, EnvSpec):
        make_vector_env_kwargs["spec"] = shard_spec(spec, cpus_per_shard)
    ray = _import_ray()
    if not ray.is_initialized():
        if address in (None, "local"):
            num_cpus = max(os.cpu_count() or 1, math.ceil(shards * cpus_per_shard))
            log.info("starting a local Ray instance with %d CPUs", num_cpus)
            ray.init(address="local", num_cpus=num_cpus, include_dashboard=False)
        else:
            log.info("connecting to the Ray cluster at %s", address)
            ray.init(address=address)
    return RayVectorEnv(
        num_envs,
        shards,
        env_fn=env_fn,
        env_kwargs=make_vector_env_kwargs,
        cpus_per_shard=cpus_per_shard,
        actor_options=actor_options,
        step_timeout_s=step_timeout_s,
        start_timeout_s=start_timeout_s,
    )
