"""Self-play: a pool of frozen snapshots of the learner, pushed to the env workers.

The opponent ``self`` (alone or in a mix, see :mod:`mapleenv.opponent_mix`) is a
:class:`mapleenv.policy_opponent.PolicyOpponent` in every env worker that plays one
snapshot of the pool per battle, on CPU, with its own recurrent state. The trainer side:

* :func:`make_snapshot` -- the policy's spec and weights as NumPy arrays (what crosses
  the worker pipes), its encoder name, an ``id`` and the ``loader`` that rebuilds it
  (:func:`policy_from_snapshot`, resolved by name in the worker: ``mapleenv`` never
  imports ``trainer``).
* :class:`SnapshotPool` -- the last ``pool_size`` snapshots plus, optionally, an archive
  of older ones (every ``archive_every``-th snapshot, at most ``archive_size``).
* :class:`SelfPlay` -- pushes the initial pool when training starts and a new snapshot
  every ``every`` updates, without restarting the workers:
  ``envs.call("call_opponent", "sync_pool", added, kept_ids)``. Its :meth:`SelfPlay.state_dict`
  goes into the checkpoint, so ``resume`` keeps the pool.

Per-opponent win rates (``win_rate/<name>`` metrics columns, :func:`win_rate_columns`)
come from :class:`OpponentStats`, a vector-env wrapper that reads ``info["opponent"]``
and ``info["won"]`` of the finished episodes.

This module imports ``trainer.policy`` lazily: ``trainer.config`` may import
:class:`SelfPlayConfig` from here.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from gymnasium.vector import VectorEnv, VectorWrapper

log = logging.getLogger(__name__)

LOADER = "trainer.selfplay:policy_from_snapshot"


@dataclass
class SelfPlayConfig:
    """Self-play settings (active when ``env.opponent`` is ``self`` or a mix with ``self``)."""

    every: int = 10  # updates (iterations) between snapshot pushes
    pool_size: int = 5  # most recent snapshots the opponent draws from
    archive_size: int = 0  # older snapshots kept besides the recent ones
    archive_every: int = 10  # keep every n-th snapshot in the archive


def make_snapshot(policy: torch.nn.Module, encoder: str, snapshot_id: int) -> dict[str, Any]:
    """A picklable snapshot of ``policy`` (NumPy weights on CPU)."""
    from trainer.policy import policy_spec

    return {
        "id": int(snapshot_id),
        "loader": LOADER,
        "encoder": encoder,
        "policy": policy_spec(policy),  # type: ignore[arg-type]
        "model": {k: v.detach().cpu().numpy().copy() for k, v in policy.state_dict().items()},
    }


def policy_from_snapshot(snapshot: Mapping[str, Any]) -> torch.nn.Module:
    """Rebuild a snapshot's (or a checkpoint's) policy on CPU, in eval mode."""
    from trainer.policy import build_policy

    spec = snapshot["policy"]
    policy = build_policy(spec["obs_dim"], spec["n_actions"], spec["model"])
    state = {k: torch.as_tensor(np.asarray(v)) if not torch.is_tensor(v) else v
             for k, v in snapshot["model"].items()}
    policy.load_state_dict(state)
    return policy.cpu().eval()


class SnapshotPool:
    """The last ``pool_size`` snapshots plus an archive of older ones (see module docs)."""

    def __init__(self, pool_size: int, archive_size: int = 0, archive_every: int = 10):
        if pool_size < 1:
            raise ValueError(f"selfplay.pool_size must be >= 1, got {pool_size}")
        if archive_size < 0 or archive_every < 1:
            raise ValueError("selfplay.archive_size must be >= 0 and archive_every >= 1")
        self.pool_size, self.archive_size, self.archive_every = (
            pool_size, archive_size, archive_every)
        self.recent: list[dict[str, Any]] = []
        self.archive: list[dict[str, Any]] = []
        self.next_id = 0

    @property
    def snapshots(self) -> list[dict[str, Any]]:
        """Archive then recent snapshots, oldest first."""
        return [*self.archive, *self.recent]

    def ids(self) -> list[int]:
        return [s["id"] for s in self.snapshots]

    def add(self, policy: torch.nn.Module, encoder: str) -> dict[str, Any]:
        """Snapshot ``policy`` into the pool (evicting the oldest); returns the snapshot."""
        snapshot = make_snapshot(policy, encoder, self.next_id)
        self.next_id += 1
        self.recent.append(snapshot)
        while len(self.recent) > self.pool_size:
            old = self.recent.pop(0)
            if self.archive_size and old["id"] % self.archive_every == 0:
                self.archive.append(old)
                del self.archive[:-self.archive_size]
        return snapshot

    def state_dict(self) -> dict[str, Any]:
        return {"recent": self.recent, "archive": self.archive, "next_id": self.next_id}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.recent = list(state["recent"])[-self.pool_size:]
        self.archive = list(state["archive"])[-self.archive_size:] if self.archive_size else []
        self.next_id = int(state["next_id"])


class SelfPlay:
    """Keeps the pool and pushes it to the workers of ``envs`` (see module docs)."""

    def __init__(self, cfg: SelfPlayConfig, envs: Any, encoder: str):
        if cfg.every < 1:
            raise ValueError(f"selfplay.every must be >= 1, got {cfg.every}")
        self.cfg, self.envs, self.encoder = cfg, envs, encoder
        self.pool = SnapshotPool(cfg.pool_size, cfg.archive_size, cfg.archive_every)
        self.pushes = 0

    @classmethod
    def for_env(cls, cfg: SelfPlayConfig, env_cfg: Any, envs: Any) -> SelfPlay | None:
        """A ``SelfPlay`` if ``env_cfg.opponent`` uses ``self``, else ``None``."""
        from mapleenv.opponent_mix import uses_self_play

        opponent = getattr(env_cfg, "opponent", None)
        if opponent is None or not uses_self_play(_plain(opponent)):
            return None
        return cls(cfg, envs, str(getattr(env_cfg, "encoder", "simple")))

    def _sync(self, added: Sequence[Mapping[str, Any]]) -> None:
        keep = self.pool.ids()
        results = self.envs.call("call_opponent", "sync_pool", list(added), keep)
        bad = [i for i, ids in enumerate(results) if list(ids) != keep]
        if bad:
            raise RuntimeError(f"self-play pool out of sync in env(s) {bad}: expected {keep}")
        self.pushes += 1

    def start(self, policy: torch.nn.Module) -> None:
        """Push the pool (from a resumed checkpoint) or a first snapshot of ``policy``."""
        if not self.pool.snapshots:
            self.pool.add(policy, self.encoder)
        self._sync(self.pool.snapshots)
        log.info("self-play: pool %s pushed to %d env(s)", self.pool.ids(), self.envs.num_envs)

    def after_update(self, policy: torch.nn.Module, iteration: int) -> bool:
        """Push a new snapshot of ``policy`` every ``every`` updates; True if pushed."""
        if iteration % self.cfg.every:
            return False
        snapshot = self.pool.add(policy, self.encoder)
        self._sync([snapshot])
        log.debug("self-play: snapshot %d pushed; pool %s", snapshot["id"], self.pool.ids())
        return True

    def state_dict(self) -> dict[str, Any]:
        return self.pool.state_dict()

    def load_state_dict(self, state: Mapping[str, Any] | None) -> None:
        if state:
            self.pool.load_state_dict(state)


def _plain(value: Any) -> Any:
    """A Hydra/OmegaConf node as plain Python (dicts stay mappings)."""
    try:
        from omegaconf import OmegaConf

        if OmegaConf.is_config(value):
            return OmegaConf.to_container(value, resolve=True)
    except ImportError:  # pragma: no cover - omegaconf ships with hydra
        pass
    return value


def win_rate_columns(opponent: Any) -> list[str]:
    """``win_rate/<name>`` metrics columns for ``env.opponent`` (a name or a mix; ``None``
    for envs without opponents: no columns)."""
    from mapleenv.opponent_mix import opponent_names

    if opponent is None:
        return []
    return [f"win_rate/{name}" for name in opponent_names(_plain(opponent))]


def opponent_win_rates(columns: Iterable[str], opponents: Sequence[str],
                       wins: Sequence[bool]) -> dict[str, float]:
    """Win rate per ``win_rate/<name>`` column over episodes (NaN: none against it)."""
    totals: dict[str, list[int]] = {}
    for name, won in zip(opponents, wins, strict=True):
        counts = totals.setdefault(f"win_rate/{name}", [0, 0])
        counts[0] += bool(won)
        counts[1] += 1
    return {c: (totals[c][0] / totals[c][1] if c in totals else math.nan) for c in columns}


class OpponentStats(VectorWrapper):
    """Records ``(info["opponent"], info["won"])`` of every finished episode.

    Works with both autoreset modes (``final_info`` under SAME_STEP). Episodes without
    ``won`` (aborted battles) or ``opponent`` are not recorded.
    """

    def __init__(self, env: VectorEnv, columns: Sequence[str]):
        super().__init__(env)
        self.columns = list(columns)
        self.opponents: list[str] = []
        self.wins: list[bool] = []

    def step(self, actions: Any) -> tuple[Any, ...]:
        obs, rewards, terminated, truncated, info = self.env.step(actions)
        done = np.asarray(terminated) | np.asarray(truncated)
        if done.any():
            final = info.get("final_info", info)
            names, won = final.get("opponent"), final.get("won")
            if names is not None and won is not None:
                has = np.asarray(final.get("_opponent", True)) & np.asarray(final.get("_won", True))
                for i in np.flatnonzero(done & has):
                    self.opponents.append(str(names[i]))
                    self.wins.append(bool(won[i]))
        return obs, rewards, terminated, truncated, info

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self.env.call(name, *args, **kwargs)

    def pop_win_rates(self) -> dict[str, float]:
        """Win rate per column since the last call (NaN: no episode against it)."""
        rates = opponent_win_rates(self.columns, self.opponents, self.wins)
        self.opponents, self.wins = [], []
        return rates
