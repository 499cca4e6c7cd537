"""Build the vector env a run trains on: Showdown battles or any Gymnasium env."""

from __future__ import annotations

import dataclasses
import logging
import time
from multiprocessing import connection as mp_connection
from pathlib import Path
from typing import Any

import gymnasium as gym
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, VectorEnv, VectorWrapper
from gymnasium.vector.async_vector_env import AsyncState

from mapleenv.spec import EnvSpec
from mapleenv.vector import EnvPoolFailed, EnvWorkersFailing
from trainer.config import (
    ConfigError,
    EnvConfig,
    GymEnvConfig,
    ShowdownEnvConfig,
    env_spec,
    gym_id_problem,
)

log = logging.getLogger(__name__)

__all__ = [
    "EnvPoolFailed",
    "EnvWorkerDied",
    "EnvWorkerStalled",
    "EnvWorkersFailing",
    "StepWatch",
    "autoreset_mode",
    "make_envs",
    "new_replacements",
    "run_spec",
    "terminate_envs",
    "worker_failure",
]


def make_envs(cfg: EnvConfig, spec: EnvSpec | None = None) -> VectorEnv:
    """A vector env for ``cfg`` (``kind`` ``showdown`` or ``gym``); the values were checked
    with the config (:func:`trainer.config.to_run_config`). Showdown envs are built from
    ``spec``, the run's checked spec (:func:`run_spec`), trusted as it is."""
    if isinstance(cfg, ShowdownEnvConfig) or cfg.kind == "showdown":
        assert spec is not None and spec.is_checked, "Showdown envs need the run's checked spec"
        envs = _make_showdown(cfg, spec)  # type: ignore[arg-type]
    elif isinstance(cfg, GymEnvConfig) or cfg.kind == "gym":
        envs = _make_gym(cfg)  # type: ignore[arg-type]
    else:
        raise ValueError(f"env.kind must be 'showdown' or 'gym', got {cfg.kind!r}")
    if getattr(envs, "healing", None) is not None:  # replaces its failed workers itself
        return envs
    if isinstance(envs, AsyncVectorEnv) and cfg.step_timeout_s is not None:
        return StepWatch(envs, cfg.step_timeout_s)
    return envs


def run_spec(
    cfg: EnvConfig, spec: EnvSpec | None, seed: int | None, log_dir: str | Path | None
) -> EnvSpec | None:
    """The checked spec of a run's Showdown envs: the config step's
    (:func:`trainer.config.to_run_config`) with the run's seed and server log folder;
    ``None`` for a Gymnasium env. A caller that kept only the typed config (or a config
    checked without Node) gives none: it is built from ``env.*`` and checked here."""
    if not (isinstance(cfg, ShowdownEnvConfig) or cfg.kind == "showdown"):
        return None
    if spec is None:
        try:
            spec = env_spec(cfg).checked()
        except ValueError as exc:
            raise ConfigError(f"env: {exc}") from exc
    log_dir = None if log_dir is None else str(log_dir)
    return dataclasses.replace(spec, seed=seed, log_dir=log_dir)


class EnvWorkerStalled(RuntimeError):
    """Env workers that did not answer a step within the timeout (hung, stopped); names them."""


class StepWatch(VectorWrapper):
    """Steps an ``AsyncVectorEnv`` while watching its workers' replies: a stall longer than
    ``log_after_s`` is logged once, naming the silent workers; past ``timeout_s`` the step
    raises :class:`EnvWorkerStalled` (the trainer then stops with its checkpoint). If the
    envs' server/host watchdog gives up meanwhile, the step raises :class:`EnvPoolFailed`
    at once (the workers would only retry against a server that will not come back)."""

    def __init__(self, env: AsyncVectorEnv, timeout_s: float, log_after_s: float = 10.0):
        super().__init__(env)
        self.timeout_s, self.log_after_s = timeout_s, min(log_after_s, timeout_s)

    def step(self, actions: Any) -> Any:
        self.env.step_async(actions)
        pipes = self.env.unwrapped.parent_pipes
        silent = list(range(len(pipes)))
        start = time.monotonic()
        logged = False
        while silent:
            failure = getattr(self.env.unwrapped, "pool_failure", None)
            if failure is not None:
                raise EnvPoolFailed(failure)
            elapsed = time.monotonic() - start
            if elapsed >= self.timeout_s:
                raise EnvWorkerStalled(
                    f"env worker(s) {silent} did not answer a step within "
                    f"{self.timeout_s:.0f} s (env.step_timeout_s)"
                )
            if not logged and elapsed >= self.log_after_s:
                log.warning(
                    "env step stalled for over %.0f s: worker(s) %s silent",
                    self.log_after_s,
                    silent,
                )
                logged = True
            ready = mp_connection.wait(
                [pipes[i] for i in silent], timeout=min(1.0, self.timeout_s - elapsed)
            )
            silent = [i for i in silent if pipes[i] not in ready]
        if logged:
            log.warning("env step resumed after %.1f s", time.monotonic() - start)
        return self.env.step_wait()

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self.env.call(name, *args, **kwargs)

    def get_attr(self, name: str) -> Any:
        return self.env.get_attr(name)

    def set_attr(self, name: str, values: Any) -> None:
        self.env.set_attr(name, values)


def new_replacements(envs: VectorEnv, seen: int) -> tuple[list[int], int]:
    """The env workers replaced since a caller last looked (it had seen ``seen``
    replacements; new processes have lost the state it sent them), and the count now; none
    for vector envs that do not replace their workers."""
    replaced = list(getattr(envs.unwrapped, "replaced_workers", ()))
    return replaced[seen:], len(replaced)


def autoreset_mode(envs: VectorEnv) -> AutoresetMode:
    """The vector env's autoreset mode (Gymnasium's default NEXT_STEP if it does not say)."""
    mode = envs.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
    mode = AutoresetMode(mode) if not isinstance(mode, AutoresetMode) else mode
    if mode == AutoresetMode.DISABLED:
        raise ValueError("vector envs with autoreset disabled are not supported")
    return mode


def terminate_envs(envs: VectorEnv) -> None:
    """Close ``envs`` at once after an interrupt, without waiting for a pending step.

    Ctrl-C reaches the whole process group, so async workers may already be gone with a
    step in flight; Gymnasium's ``close(terminate=True)`` would still read that step's
    replies from their dead pipes (EOFError) and leave the env half closed. The workers
    are terminated first and the pending call dropped.
    """
    base = envs.unwrapped
    if isinstance(base, AsyncVectorEnv) and base._state != AsyncState.DEFAULT:
        for process in base.processes:
            if process.is_alive():
                process.terminate()
        deadline = time.monotonic() + 5.0
        for process in base.processes:  # a stopped (SIGSTOP) worker ignores SIGTERM
            process.join(max(deadline - time.monotonic(), 0.0))
            if process.is_alive():
                process.kill()
                process.join(5.0)
        base._state = AsyncState.DEFAULT  # nothing to wait for: its workers are gone
    envs.close(terminate=True)


class EnvWorkerDied(RuntimeError):
    """An env worker process ended during training (killed, crashed); names it."""


def worker_failure(
    envs: VectorEnv, exc: BaseException, grace_s: float = 5.0
) -> EnvWorkerDied | None:
    """If ``exc`` (raised by a vector step) came from dead ``AsyncVectorEnv`` workers, an
    :class:`EnvWorkerDied` naming them (index, pid, exit code); else ``None``."""
    base = envs.unwrapped
    if not isinstance(base, AsyncVectorEnv) or not isinstance(exc, EOFError | ConnectionError):
        return None
    # A killed worker's pipe closes a moment before its process can be reaped: wait for
    # the exit (one worker at least) up to a deadline before deciding.
    deadline = time.monotonic() + grace_s
    while all(p.is_alive() for p in base.processes) and time.monotonic() < deadline:
        time.sleep(0.05)
    dead = [
        f"env worker {i} (pid {p.pid}, exit code {p.exitcode})"
        for i, p in enumerate(base.processes)
        if not p.is_alive()
    ]
    if not dead:
        return None
    return EnvWorkerDied(f"{', '.join(dead)} ended during a step ({type(exc).__name__})")


def _make_gym(cfg: GymEnvConfig) -> VectorEnv:
    problem = gym_id_problem(cfg.id)  # also registers mapleenv/* ids
    if problem:
        raise ValueError(problem)
    vector_kwargs: dict = {"autoreset_mode": AutoresetMode.SAME_STEP}
    if cfg.vectorization == "async" and cfg.context:
        vector_kwargs["context"] = cfg.context
    return gym.make_vec(
        cfg.id,
        num_envs=cfg.num_envs,
        vectorization_mode=cfg.vectorization,
        vector_kwargs=vector_kwargs,
        **dict(cfg.kwargs),
    )


def _make_showdown(cfg: ShowdownEnvConfig, spec: EnvSpec) -> VectorEnv:
    log.info(
        "starting %d Showdown env(s) (%s, %s backend): %s vs %s",
        cfg.num_envs,
        cfg.vectorization,
        spec.backend,
        cfg.battle_format,
        cfg.opponent,
    )
    vector = dict(context=cfg.context, autoreset_mode=AutoresetMode.SAME_STEP)
    if cfg.vectorization == "ray":
        from mapleenv.vector import make_ray_vector_env

        return make_ray_vector_env(
            cfg.num_envs,
            cfg.ray.shards,
            cfg.ray.cpus_per_shard,
            cfg.ray.address,
            step_timeout_s=cfg.ray.step_timeout_s,
            spec=spec,
            **vector,
        )
    from mapleenv import make_vector_env

    return make_vector_env(
        cfg.num_envs,
        spec,
        worker_timeout_s=cfg.step_timeout_s,
        allow_oversubscribe=True,  # the config check counted these processes already
        battles_per_worker=cfg.battles_per_worker,
        **vector,
    )
