"""Env workers that die or hang are replaced in the middle of a step, not the end of a run.

:class:`HealingStep` waits for an ``AsyncVectorEnv``'s step replies the way
``step_wait`` does, but watches each worker: one whose process ended (killed, crashed)
or that stays silent past ``worker_timeout_s`` (stopped, deadlocked) is killed and
replaced by a fresh process built from the same env factory, shared-memory slot and
error queue. The new worker resets its env, and the step reports that env's episode as
truncated with ``info["aborted"]`` (its ``final_obs`` is the last observation it had), as
a battle on a killed simulator host or server already ends; the other envs step as usual.
A worker that fails ``max_failures`` times in a row (replaced each time, it fails again
before it completes a step) raises :class:`EnvWorkersFailing` (one line naming it): a fault
that keeps coming back is not retried forever, while independent faults of different
workers, however close together, are each survived. While waiting, a watchdog that gave up
on the envs' simulator hosts or servers raises :class:`EnvPoolFailed` at once. RLlib
restarts failed env runners the same way.
"""

from __future__ import annotations

import logging
import time
from multiprocessing import connection as mp_connection
from multiprocessing import sharedctypes
from typing import Any

import numpy as np
from gymnasium.vector import AsyncVectorEnv
from gymnasium.vector.async_vector_env import AsyncState, _async_worker
from gymnasium.vector.utils import CloudpickleWrapper

# The least time a replacement worker gets to start and reset: a spawned process imports
# torch and poke-env and starts a battle, seconds on a quiet box, tens on a loaded one.
START_ALLOWANCE_S = 120.0

logger = logging.getLogger(__name__)


class EnvWorkersFailing(RuntimeError):
    """An env worker failed ``max_failures`` times in a row, replacements included."""


class EnvPoolFailed(RuntimeError):
    """The envs' Showdown servers or simulator hosts could not be restarted (their watchdog
    gave up, e.g. a port taken by another program); says which and why."""


class HealingStep:
    """The step-reply side of an ``AsyncVectorEnv`` with worker replacement (module docs)."""

    def __init__(
        self,
        env: AsyncVectorEnv,
        context: Any,
        worker_timeout_s: float | None = 300.0,
        max_failures: int = 3,
        log_after_s: float = 10.0,
        abort_reply: Any = None,
    ) -> None:
        self.env, self.context = env, context
        # a replaced worker's step reply (why, final_obs, reset_info) -> reply; None: one env
        self.abort_reply = abort_reply
        self.worker_timeout_s, self.max_failures = worker_timeout_s, max_failures
        self.log_after_s = (
            log_after_s if worker_timeout_s is None else min(log_after_s, worker_timeout_s)
        )
        self.failures: dict[int, int] = {}  # per env: failures since its last completed step
        self.replaced: list[int] = []  # every replacement so far, by env index
        self._buffer: Any = None  # the observations' shared memory, for new workers

    def step_wait(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        """``AsyncVectorEnv.step_wait``, replacing the workers that failed (module docs)."""
        env = self.env
        try:
            return self._step_wait()
        finally:  # a failure leaves no call pending: close() must not wait for one
            env._state = AsyncState.DEFAULT

    def _step_wait(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        env = self.env
        failed = self._wait()
        results: list[tuple[Any, ...]] = []
        for i, pipe in enumerate(env.parent_pipes):
            if i not in failed:
                try:
                    reply, success = pipe.recv()
                except (EOFError, ConnectionError, OSError):
                    failed[i] = "its pipe closed"
                else:
                    results.append((i, reply, success))
                    continue
            results.append((i, self._replace(i, failed[i]), True))
        env._raise_if_errors([success for _, _, success in results])
        self._count(failed)
        rewards, terminated, truncated, infos = [], [], [], {}
        for i, reply, _ in results:
            _, reward, term, trunc, info = reply
            rewards.append(reward)
            terminated.append(term)
            truncated.append(trunc)
            infos = env._add_info(infos, info, i)
        return (
            env.observations,
            np.array(rewards, dtype=np.float64),
            np.array(terminated, dtype=np.bool_),
            np.array(truncated, dtype=np.bool_),
            infos,
        )

    def _wait(self) -> dict[int, str]:
        """Wait until every worker replied, died or timed out; ``{index: why}`` of the
        workers that failed."""
        env = self.env
        silent = set(range(env.num_envs))
        failed: dict[int, str] = {}
        start, logged = time.monotonic(), False
        while silent:
            failure = getattr(env, "pool_failure", None)
            if failure is not None:
                raise EnvPoolFailed(failure)
            for i in [i for i in silent if not env.processes[i].is_alive()]:
                failed[i] = f"its process ended (exit code {env.processes[i].exitcode})"
                silent.discard(i)
            elapsed = time.monotonic() - start
            if self.worker_timeout_s is not None and elapsed >= self.worker_timeout_s:
                for i in silent:
                    failed[i] = f"it did not answer a step within {self.worker_timeout_s:.0f} s"
                break
            if not logged and elapsed >= self.log_after_s and silent:
                logger.warning(
                    "env step stalled for over %.0f s: worker(s) %s silent",
                    self.log_after_s,
                    sorted(silent),
                )
                logged = True
            ready = mp_connection.wait([env.parent_pipes[i] for i in silent], timeout=0.5)
            silent = {i for i in silent if env.parent_pipes[i] not in ready}
        if logged and not failed:
            logger.warning("env step resumed after %.1f s", time.monotonic() - start)
        return failed

    def _count(self, failed: dict[int, str]) -> None:
        """A completed step clears a worker's count; ``max_failures`` in a row raise."""
        for i in range(self.env.num_envs):
            self.failures[i] = self.failures.get(i, 0) + 1 if i in failed else 0
        again = sorted(i for i, n in self.failures.items() if n >= self.max_failures)
        if again:
            why = "; ".join(f"env worker {i}: {failed[i]}" for i in again)
            raise EnvWorkersFailing(
                f"env worker(s) {again} failed {self.max_failures} times in a row (replaced "
                f"each time, failed again before completing a step); the last: {why}"
            )

    def _replace(self, index: int, why: str) -> tuple[Any, ...]:
        """Replace worker ``index`` (tried up to ``max_failures`` times: a new worker can
        fail while it starts, too); the step reply of that env, its episode truncated and
        aborted."""
        logger.warning("env worker %d failed (%s): replacing it", index, why)
        final_obs = _slot(self.env.observations, index)  # before the new worker's reset
        for attempt in range(1, self.max_failures + 1):
            self._restart(index)
            try:
                reset_info = self._reset(index)
                break
            except (EOFError, ConnectionError, OSError, TimeoutError) as exc:
                logger.warning("replacement %d of env worker %d failed: %s", attempt, index, exc)
        else:
            raise EnvWorkersFailing(
                f"env worker {index} failed ({why}), and {self.max_failures} replacement(s) "
                "in a row failed while starting"
            )
        self.replaced.append(index)
        aborted = f"env worker {index} replaced: {why}"
        if self.abort_reply is not None:  # several battles per worker (mapleenv.vector.group)
            return self.abort_reply(aborted, final_obs, reset_info)
        info = {"final_obs": final_obs, "final_info": {"aborted": aborted}, **reset_info}
        return None, 0.0, False, True, info

    def _restart(self, index: int) -> None:
        """Kill worker ``index`` (SIGKILL also ends a stopped one) and start a new process
        in its place: the same env factory, shared-memory slot and error queue."""
        env = self.env
        old = env.processes[index]
        if old.is_alive():
            old.kill()
        old.join(10.0)
        env.parent_pipes[index].close()
        if self._buffer is None:
            self._buffer = shared_buffer(env.observations, self.context)
        parent_pipe, child_pipe = self.context.Pipe()
        args = (
            index,
            CloudpickleWrapper(env.env_fns[index]),
            child_pipe,
            parent_pipe,
            self._buffer,
            env.error_queue,
            env.autoreset_mode,
        )
        process = self.context.Process(
            target=_async_worker, name=old.name, args=args, daemon=old.daemon
        )
        process.start()
        child_pipe.close()
        env.processes[index], env.parent_pipes[index] = process, parent_pipe

    def _reset(self, index: int) -> dict[str, Any]:
        """Reset the new worker's env (its observation goes to shared memory); its info.
        A start (spawn, imports, the env, a battle) gets at least ``START_ALLOWANCE_S``:
        on a loaded machine it takes far longer than the step ``worker_timeout_s`` bounds."""
        env = self.env
        pipe, process = env.parent_pipes[index], env.processes[index]
        pipe.send(("reset", {}))
        allowance = None
        if self.worker_timeout_s is not None:
            allowance = max(self.worker_timeout_s, START_ALLOWANCE_S)
        deadline = None if allowance is None else time.monotonic() + allowance
        while not pipe.poll(0.5):
            if not process.is_alive():
                raise EOFError(f"it ended while starting (exit code {process.exitcode})")
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"it did not reset within {allowance:.0f} s")
        (_, reset_info), success = pipe.recv()
        if not success:
            env._raise_if_errors([False])
        return reset_info


def _slot(observations: Any, index: int) -> Any:
    """A copy of env ``index``'s entry of a batched (dict of) observation array(s)."""
    if isinstance(observations, dict):
        return {key: _slot(value, index) for key, value in observations.items()}
    return np.array(observations[index], copy=True)


def shared_buffer(observations: Any, context: Any) -> Any:
    """The shared memory behind an ``AsyncVectorEnv``'s observation arrays, as a new worker
    takes it (Gymnasium keeps only the arrays: each one's base is the raw shared array)."""
    if isinstance(observations, dict):
        return {key: shared_buffer(value, context) for key, value in observations.items()}
    raw = observations
    while isinstance(raw, np.ndarray):
        raw = raw.base
    return sharedctypes.synchronized(raw, ctx=context)
