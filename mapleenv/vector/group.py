"""Several battles per env worker (``battles_per_worker=B``, EnvPool-style).

``make_vector_env(n, ..., battles_per_worker=B)`` starts ``n / B`` worker processes instead
of ``n``. Each runs a :class:`BattleGroup`: ``B`` :class:`~mapleenv.env.PokemonEnv` on one
poke-env/torch start-up (one interpreter, one copy of the modules, the encoders' tables and
the opponents' policy code per worker), one message per vector step and worker. The
battles step in ``B`` threads: one waits for its simulator host (the GIL released) while
another's Python runs, so a worker keeps its core busy; their Python work still shares one
core, so give the workers the cores (``n / B`` about the cores left to env workers). The
group resets its own finished battles (the vector env's autoreset mode, per battle), so
the worker's own ``AsyncVectorEnv`` runs with autoreset off.

:class:`GroupedVectorEnv` is what the caller gets: a Gymnasium ``VectorEnv`` of ``n`` envs,
the same spaces, autoreset modes, ``infos`` (``final_obs``/``final_info`` with their ``_key``
masks), ``call``/``set_attr`` per env, ``action_masks`` and ``replaced_workers`` (env
indices) as with one battle per worker. Env ``i`` is battle ``i % B`` of worker ``i // B``
and keeps the seed ``seed + i``. The observations' shared memory is ``[n / B, B, ...]``,
the same bytes as ``[n, ...]`` (``observations`` are views of it; ``step`` and ``reset``
return copies, as ``AsyncVectorEnv`` does). A dead or hung worker
is replaced as before (:mod:`mapleenv.vector.heal`): its ``B`` battles end aborted.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

from mapleenv.env import PokemonEnv
from mapleenv.showdown.process import die_with_parent
from mapleenv.spec import EnvSpec
from mapleenv.vector.masks import action_masks

__all__ = ["BattleGroup", "GroupedVectorEnv", "group_abort_reply", "hide_gpus", "worker_group"]


def _in_worker() -> bool:
    return multiprocessing.parent_process() is not None


def hide_gpus() -> None:
    """No GPU for this process (an env worker): its frozen policies and everything else run
    on CPU, and only the trainer holds a CUDA context (DESIGN.md, contract 3). Must run
    before anything in the process initialises CUDA (the driver reads the variable then)."""
    os.environ["CUDA_VISIBLE_DEVICES"] = ""


def worker_group(specs: Sequence[EnvSpec], autoreset_mode: AutoresetMode) -> BattleGroup:
    """A worker's :class:`BattleGroup`; in an env worker, first ties its life to its parent's
    and hides the GPUs (as ``mapleenv.vector.local`` does for one battle). In the parent
    (``AsyncVectorEnv`` builds one env there for the spaces) only one battle is built."""
    if _in_worker():
        die_with_parent()
        hide_gpus()
        return BattleGroup(specs, autoreset_mode)
    return BattleGroup(specs[:1], autoreset_mode, size=len(specs))


class BattleGroup(gym.Env):
    """``B`` battles as one env of batched spaces (module docs): ``step(actions[B])`` steps
    each battle and resets the finished ones the way ``autoreset_mode`` says; ``info`` is
    ``{"battles": [info of battle b, ...]}``. An attribute it does not have is read from
    every battle: a list of values, or a function calling each battle's method."""

    def __init__(
        self,
        specs: Sequence[EnvSpec],
        autoreset_mode: AutoresetMode = AutoresetMode.NEXT_STEP,
        size: int | None = None,
    ) -> None:
        self.envs: list[PokemonEnv] = []
        try:
            for spec in specs:
                self.envs.append(PokemonEnv(spec=spec))
        except BaseException:
            self.close()
            raise
        self.size = size or len(self.envs)
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        single = self.envs[0]
        self.single_observation_space = single.observation_space
        self.observation_space = batch_space(single.observation_space, self.size)
        self.action_space = batch_space(single.action_space, self.size)
        self._obs = create_empty_array(single.observation_space, self.size)
        self._autoreset = np.zeros(self.size, dtype=np.bool_)
        self._threads: ThreadPoolExecutor | None = None

    def _map(self, function: Any, *iterables: Any) -> list[Any]:
        """``function`` over the battles, one thread each (in order; the first error raises)."""
        if len(self.envs) == 1:
            return list(map(function, *iterables))
        if self._threads is None:
            self._threads = ThreadPoolExecutor(len(self.envs), thread_name_prefix="battle")
        return list(self._threads.map(function, *iterables))

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict | None = None
    ) -> tuple[Any, dict]:
        if seed is None or isinstance(seed, int):
            seeds = [None if seed is None else seed + b for b in range(self.size)]
        else:
            seeds = list(seed)
        results = self._map(lambda env, s: env.reset(seed=s, options=options), self.envs, seeds)
        self._autoreset[:] = False
        obs = concatenate(self.single_observation_space, [o for o, _ in results], self._obs)
        return obs, {"battles": [info for _, info in results]}

    def _step_one(self, b: int, action: Any) -> tuple[Any, float, bool, bool, dict]:
        env = self.envs[b]
        if self._autoreset[b]:  # NEXT_STEP: this step is the reset
            obs, info = env.reset()
            reward, terminated, truncated = 0.0, False, False
        else:
            obs, reward, terminated, truncated, info = env.step(action)
        done = bool(terminated or truncated)
        if done and self.autoreset_mode == AutoresetMode.SAME_STEP:
            reset_obs, reset_info = env.reset()
            info = {"final_info": info, "final_obs": obs, **reset_info}
            obs = reset_obs
        self._autoreset[b] = done and self.autoreset_mode == AutoresetMode.NEXT_STEP
        return obs, reward, terminated, truncated, info

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        results = self._map(self._step_one, range(self.size), list(actions))
        obs = concatenate(self.single_observation_space, [r[0] for r in results], self._obs)
        rewards = np.array([r[1] for r in results], dtype=np.float64)
        terminated = np.array([r[2] for r in results], dtype=np.bool_)
        truncated = np.array([r[3] for r in results], dtype=np.bool_)
        return obs, rewards, terminated, truncated, {"battles": [r[4] for r in results]}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("envs", "size"):
            raise AttributeError(name)
        values = [getattr(env, name) for env in self.envs]
        if values and all(callable(v) for v in values):
            return lambda *args, **kwargs: [v(*args, **kwargs) for v in values]
        return values

    def get_wrapper_attr(self, name: str) -> Any:
        return getattr(self, name)

    def set_wrapper_attr(self, name: str, value: Any, *, force: bool = True) -> bool:
        """``value``: one per battle (a list of ``B``), or one for all."""
        per_battle = isinstance(value, list | tuple) and len(value) == self.size
        for b, env in enumerate(self.envs):
            env.set_wrapper_attr(name, value[b] if per_battle else value)
        return True

    def close(self) -> None:
        for env in self.envs:
            env.close()
        if getattr(self, "_threads", None) is not None:
            self._threads.shutdown()


def group_abort_reply(
    size: int, why: str, final_obs: Any, reset_info: dict
) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
    """The step reply of a replaced worker's ``size`` battles: truncated and aborted, their
    last observations as ``final_obs`` (``final_obs``: the worker's ``[B, ...]`` slot)."""
    battles = reset_info.get("battles") or [{} for _ in range(size)]
    infos = [
        {"final_obs": _item(final_obs, b), "final_info": {"aborted": why}, **battles[b]}
        for b in range(size)
    ]
    false = np.zeros(size, dtype=np.bool_)
    return None, np.zeros(size), false, np.ones(size, dtype=np.bool_), {"battles": infos}


def _item(batch: Any, index: int) -> Any:
    if isinstance(batch, dict):
        return {key: _item(value, index) for key, value in batch.items()}
    return np.array(batch[index], copy=True)


def _unbatch(space: spaces.Space) -> spaces.Space:
    """The one-battle space of a group's batched space."""
    if isinstance(space, spaces.Dict):
        return spaces.Dict({key: _unbatch(value) for key, value in space.spaces.items()})
    if isinstance(space, spaces.MultiDiscrete):
        return spaces.Discrete(int(space.nvec[0]), start=int(space.start[0]))
    if isinstance(space, spaces.Box):
        return spaces.Box(space.low[0], space.high[0], dtype=space.dtype)
    raise TypeError(f"battles_per_worker: cannot unbatch {space}")


class GroupedVectorEnv(VectorEnv):
    """``inner``'s workers' battles as one ``VectorEnv`` of ``workers * B`` envs (module
    docs); ``inner``: a ``ShowdownVectorEnv`` of :class:`BattleGroup` workers, autoreset off."""

    def __init__(self, inner: Any, battles_per_worker: int, autoreset_mode: AutoresetMode):
        self.inner, self.battles_per_worker = inner, battles_per_worker
        self.num_envs = inner.num_envs * battles_per_worker
        self.single_observation_space = _unbatch(inner.single_observation_space)
        self.single_action_space = _unbatch(inner.single_action_space)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.metadata = {**inner.metadata, "autoreset_mode": AutoresetMode(autoreset_mode)}
        self.spec = None
        self.render_mode = None
        self.closed = False
        self.observations = self._flat(inner.observations)  # views of the shared memory
        self._np_random = None

    def _flat(self, batch: Any) -> Any:
        if isinstance(batch, dict):
            return {key: self._flat(value) for key, value in batch.items()}
        return batch.reshape(self.num_envs, *batch.shape[2:])

    def _copy(self) -> Any:
        return {key: np.array(value, copy=True) for key, value in self.observations.items()}

    def _infos(self, infos: dict) -> dict:
        """The workers' ``{"battles": [...]}`` as one vector ``infos`` of ``num_envs``."""
        out: dict[str, Any] = {}
        per_worker = infos.get("battles")
        if per_worker is None:
            return out
        size = self.battles_per_worker
        for w, battles in enumerate(per_worker):
            for b, info in enumerate(battles or ()):
                if info:
                    out = self._add_info(out, info, w * size + b)
        return out

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict | None = None
    ) -> tuple[Any, dict]:
        size, n = self.battles_per_worker, self.num_envs
        if seed is None or isinstance(seed, int):
            seeds = [None if seed is None else seed + i for i in range(n)]
        else:
            seeds = list(seed)
            if len(seeds) != n:
                raise ValueError(f"reset: {len(seeds)} seeds for {n} envs")
        worker_seeds = [seeds[w * size : (w + 1) * size] for w in range(self.inner.num_envs)]
        _, infos = self.inner.reset(seed=worker_seeds, options=options)
        return self._copy(), self._infos(infos)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        actions = np.asarray(actions).reshape(self.inner.num_envs, self.battles_per_worker)
        _, rewards, terminated, truncated, infos = self.inner.step(actions)
        n = self.num_envs
        return (
            self._copy(),
            np.asarray(rewards, dtype=np.float64).reshape(n),
            np.asarray(terminated, dtype=np.bool_).reshape(n),
            np.asarray(truncated, dtype=np.bool_).reshape(n),
            self._infos(infos),
        )

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Every env's ``name`` (called with the arguments if it is a method), in env order."""
        return tuple(value for group in self.inner.call(name, *args, **kwargs) for value in group)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        return self.call(name)

    def set_attr(self, name: str, values: list[Any] | tuple[Any, ...] | Any) -> None:
        """``values``: one per env, or one for all."""
        if not isinstance(values, list | tuple):
            self.inner.set_attr(name, values)
            return
        if len(values) != self.num_envs:
            raise ValueError(f"set_attr: {len(values)} values for {self.num_envs} envs")
        size = self.battles_per_worker
        chunks = [list(values[w * size : (w + 1) * size]) for w in range(self.inner.num_envs)]
        self.inner.set_attr(name, chunks)

    def action_masks(self) -> np.ndarray:
        """Bool ``[N, A]`` legal-action masks (:func:`mapleenv.vector.masks.action_masks`)."""
        return action_masks(self)

    @property
    def replaced_workers(self) -> list[int]:
        """The envs of every worker replaced so far (all ``B`` of a worker), oldest first."""
        size = self.battles_per_worker
        return [w * size + b for w in self.inner.replaced_workers for b in range(size)]

    @property
    def healing(self) -> Any:
        return self.inner.healing

    @property
    def pool(self) -> Any:
        return self.inner.pool

    @property
    def pool_failure(self) -> str | None:
        return self.inner.pool_failure

    @property
    def processes(self) -> list[Any]:
        return self.inner.processes

    def close_extras(self, **kwargs: Any) -> None:
        self.inner.close(**kwargs)
