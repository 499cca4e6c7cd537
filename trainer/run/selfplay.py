"""Self-play: a pool of frozen snapshots of the learner, pushed to the env workers.

The opponent ``self`` (alone or in a mix, see :mod:`mapleenv.opponents.mix`) is a
:class:`mapleenv.opponents.policy.PolicyOpponent` in every env worker that plays one
snapshot of the pool per battle, on CPU, with its own recurrent state. The trainer side:

* :func:`~mapleenv.policies.make_snapshot` -- the policy's spec and weights as NumPy
  arrays (what crosses the worker pipes), its encoder name and an ``id``; the worker
  rebuilds it with :func:`~mapleenv.policies.policy_from_snapshot` (the snapshot format
  lives on the env side, :mod:`mapleenv.policies.snapshot`).
* :class:`SnapshotPool` -- the last ``pool_size`` snapshots plus, optionally, an archive
  of older ones (every ``archive_every``-th snapshot, at most ``archive_size``).
* :class:`SelfPlay` -- pushes the initial pool when training starts and then new snapshots,
  without restarting the workers: ``envs.call("call_opponent", "sync_pool", added,
  kept_ids)``. Two schedules: a snapshot every ``every`` updates, or, with
  ``promote_win_rate`` set, a *gate* (:class:`PromotionGate`): a snapshot joins only once
  the learner has won at least that fraction of its last ``promote_window`` battles against
  the newest pool member (``info["opponent_policy_id"]`` names the snapshot that played). Its
  :meth:`SelfPlay.state_dict` goes into the checkpoint, so ``resume`` keeps the pool and the
  gate's window (the weights come back as tensors and go to the workers as NumPy arrays
  again; the encoder name and ``mask_futile`` are the resumed config's, never read from the
  file). Snapshots carry the run's ``env.mask_futile``: they play as the learner does.

Per-opponent win rates come from :class:`trainer.envs.episodes.OpponentStats`.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from mapleenv.policies import make_snapshot, policy_from_snapshot
from trainer.config import SelfPlayConfig
from trainer.envs.episodes import plain
from trainer.envs.vector import new_replacements

log = logging.getLogger(__name__)

__all__ = ["PromotionGate", "SelfPlay", "SnapshotPool", "make_snapshot", "policy_from_snapshot"]


class SnapshotPool:
    """The last ``pool_size`` snapshots plus an archive of older ones (see module docs)."""

    def __init__(self, pool_size: int, archive_size: int = 0, archive_every: int = 10):
        if pool_size < 1:
            raise ValueError(f"selfplay.pool_size must be >= 1, got {pool_size}")
        if archive_size < 0 or archive_every < 1:
            raise ValueError("selfplay.archive_size must be >= 0 and archive_every >= 1")
        self.pool_size, self.archive_size, self.archive_every = (
            pool_size,
            archive_size,
            archive_every,
        )
        self.recent: list[dict[str, Any]] = []
        self.archive: list[dict[str, Any]] = []
        self.next_id = 0

    @property
    def snapshots(self) -> list[dict[str, Any]]:
        """Archive then recent snapshots, oldest first."""
        return [*self.archive, *self.recent]

    def ids(self) -> list[int]:
        return [s["id"] for s in self.snapshots]

    def add(
        self, policy: torch.nn.Module, encoder: str, mask_futile: bool = False
    ) -> dict[str, Any]:
        """Snapshot ``policy`` into the pool (evicting the oldest); returns the snapshot."""
        snapshot = make_snapshot(policy, encoder, self.next_id, mask_futile)
        self.next_id += 1
        self.recent.append(snapshot)
        while len(self.recent) > self.pool_size:
            old = self.recent.pop(0)
            if self.archive_size and old["id"] % self.archive_every == 0:
                self.archive.append(old)
                del self.archive[: -self.archive_size]
        return snapshot

    def state_dict(self) -> dict[str, Any]:
        return {"recent": self.recent, "archive": self.archive, "next_id": self.next_id}

    def load_state_dict(
        self, state: Mapping[str, Any], encoder: str, mask_futile: bool = False
    ) -> None:
        """Restore a saved pool; its snapshots play with ``encoder`` and ``mask_futile``
        (the run's own)."""
        recent = list(state["recent"])[-self.pool_size :]
        self.recent = [_restored(s, encoder, mask_futile) for s in recent]
        archive = list(state["archive"])[-self.archive_size :] if self.archive_size else []
        self.archive = [_restored(s, encoder, mask_futile) for s in archive]
        self.next_id = int(state["next_id"])


def _restored(snapshot: Mapping[str, Any], encoder: str, mask_futile: bool) -> dict[str, Any]:
    """A snapshot read back from a checkpoint, as :func:`make_snapshot` makes them: NumPy
    weights (what crosses the worker pipes), the run's encoder name and ``mask_futile``."""
    model = {k: v.numpy() if torch.is_tensor(v) else v for k, v in dict(snapshot["model"]).items()}
    restored = {**snapshot, "model": model, "encoder": encoder}
    restored.pop("mask_futile", None)
    return {**restored, "mask_futile": True} if mask_futile else restored


class PromotionGate:
    """The learner's last ``window`` results against the newest pool member; open when their
    win rate reaches ``threshold`` over a full window."""

    def __init__(self, threshold: float, window: int):
        self.threshold, self.window = threshold, window
        self.results: deque[bool] = deque(maxlen=window)

    def record(self, newest_id: int, results: Sequence[tuple[int, bool]]) -> None:
        """Keep the results of battles against ``newest_id`` (others are ignored)."""
        self.results.extend(won for snapshot_id, won in results if snapshot_id == newest_id)

    @property
    def win_rate(self) -> float:
        return sum(self.results) / len(self.results) if self.results else math.nan

    def is_open(self) -> bool:
        return len(self.results) == self.window and self.win_rate >= self.threshold

    def reset(self) -> None:
        self.results.clear()


class League:
    """The learner's last ``window`` results against each pool member and the draw weights
    they give (prioritized fictitious self-play): ``(1 - p)^power``, ``p`` the learner's
    win rate against the member, smoothed toward 1/2 (``(wins + 1) / (battles + 2)``), so a
    member it still loses to is met more often and one it always beats rarely, but never
    never; a new member starts at ``p = 1/2``."""

    def __init__(self, power: float, window: int):
        self.power, self.window = power, window
        self.results: dict[int, deque[bool]] = {}

    def record(self, results: Sequence[tuple[int, bool]]) -> None:
        for snapshot_id, won in results:
            window = self.results.setdefault(int(snapshot_id), deque(maxlen=self.window))
            window.append(bool(won))

    def forget_all_but(self, ids: Sequence[int]) -> None:
        """Drop the results of members that left the pool."""
        self.results = {i: r for i, r in self.results.items() if i in set(ids)}

    def win_rate(self, snapshot_id: int) -> float:
        """The smoothed win rate ``p`` the weights use."""
        results = self.results.get(snapshot_id, ())
        return (sum(results) + 1) / (len(results) + 2)

    def weights(self, ids: Sequence[int]) -> dict[int, float]:
        return {i: (1.0 - self.win_rate(i)) ** self.power for i in ids}

    def metrics(self, ids: Sequence[int]) -> dict[str, float]:
        """The learner's raw win rate over the league's members (mean) and against the one it
        beats least (NaN before any result)."""
        rates = [sum(r) / len(r) for i, r in self.results.items() if r and i in set(ids)]
        return {
            "selfplay/league_win_rate": float(np.mean(rates)) if rates else math.nan,
            "selfplay/hardest_win_rate": min(rates) if rates else math.nan,
        }

    def state_dict(self) -> dict[str, list[bool]]:
        return {str(i): list(r) for i, r in self.results.items()}

    def load_state_dict(self, state: Mapping[str, Sequence[bool]]) -> None:
        self.results = {}
        for key, results in state.items():
            self.record([(int(key), bool(won)) for won in results])


class SelfPlay:
    """Keeps the pool and pushes it to the workers of ``envs`` (see module docs)."""

    def __init__(self, cfg: SelfPlayConfig, envs: Any, encoder: str, mask_futile: bool = False):
        if cfg.every < 1:
            raise ValueError(f"selfplay.every must be >= 1, got {cfg.every}")
        self.cfg, self.envs, self.encoder = cfg, envs, encoder
        self.mask_futile = mask_futile  # the run's env.mask_futile: snapshots play with it
        self.pool = SnapshotPool(cfg.pool_size, cfg.archive_size, cfg.archive_every)
        self.pushes = 0
        self.promotions = 0
        self.gate = (
            PromotionGate(cfg.promote_win_rate, cfg.promote_window)
            if cfg.promote_win_rate is not None
            else None
        )
        self.league = League(cfg.pfsp_power, cfg.pfsp_window) if cfg.sampling == "pfsp" else None
        self.replaced_seen = 0  # env worker replacements already sent the pool

    @property
    def columns(self) -> tuple[str, ...]:
        """Metrics columns: snapshots added so far, and the gate's current win rate."""
        gate = ("selfplay/newest_win_rate",) if self.gate is not None else ()
        league = ("selfplay/league_win_rate", "selfplay/hardest_win_rate") if self.league else ()
        return ("selfplay/promotions", *gate, *league)

    @classmethod
    def for_env(cls, cfg: SelfPlayConfig, env_cfg: Any, envs: Any) -> SelfPlay | None:
        """A ``SelfPlay`` if ``env_cfg.opponent`` uses ``self``, else ``None``."""
        from mapleenv.opponents import uses_self_play

        opponent = getattr(env_cfg, "opponent", None)
        if opponent is None or not uses_self_play(plain(opponent)):
            return None
        encoder = str(getattr(env_cfg, "encoder", "singles_basic"))
        return cls(cfg, envs, encoder, bool(getattr(env_cfg, "mask_futile", False)))

    def _sync(self, added: Sequence[Mapping[str, Any]]) -> None:
        keep = self.pool.ids()
        args: list[Any] = [list(added), keep]
        if self.league is not None:
            args.append(self.league.weights(keep))
        results = self.envs.call("call_opponent", "sync_pool", *args)
        bad = [i for i, ids in enumerate(results) if list(ids) != keep]
        if bad:
            raise RuntimeError(f"self-play pool out of sync in env(s) {bad}: expected {keep}")
        self.pushes += 1

    def start(self, policy: torch.nn.Module) -> None:
        """Push the pool (from a resumed checkpoint) or a first snapshot of ``policy``."""
        if not self.pool.snapshots:
            self.pool.add(policy, self.encoder, self.mask_futile)
        self._sync(self.pool.snapshots)
        log.info("self-play: pool %s pushed to %d env(s)", self.pool.ids(), self.envs.num_envs)

    def after_update(
        self,
        policy: torch.nn.Module,
        iteration: int,
        results: Sequence[tuple[int, bool]] = (),
    ) -> dict[str, float]:
        """Add a snapshot of ``policy`` when the schedule says so (every ``every`` updates,
        or when the gate opens on ``results``: ``(snapshot id, won)`` of the battles since
        the last call); returns the metrics columns' values."""
        replaced, self.replaced_seen = new_replacements(self.envs, self.replaced_seen)
        if replaced:  # new worker processes start with an empty pool
            log.info(
                "self-play: pool %s pushed again (env workers %s replaced)",
                self.pool.ids(),
                replaced,
            )
            self._sync(self.pool.snapshots)
        if self.gate is None:
            promote = iteration % self.cfg.every == 0
        else:
            self.gate.record(self.pool.ids()[-1], results)
            promote = self.gate.is_open()
        row = {}
        if self.gate is not None:
            row["selfplay/newest_win_rate"] = self.gate.win_rate
        if self.league is not None:
            self.league.record(results)
        if promote:
            newest = self.pool.ids()[-1]
            snapshot = self.pool.add(policy, self.encoder, self.mask_futile)
            self._sync([snapshot])
            self.promotions += 1
            if self.gate is not None:
                log.info(
                    "self-play: promoted snapshot %d at iteration %d (won %.0f%% of the last "
                    "%d battles against snapshot %d); pool %s",
                    snapshot["id"],
                    iteration,
                    100 * self.gate.win_rate,
                    self.gate.window,
                    newest,
                    self.pool.ids(),
                )
                self.gate.reset()
            else:
                log.debug("self-play: snapshot %d pushed; pool %s", snapshot["id"], self.pool.ids())
        elif self.league is not None:
            self._sync([])  # the weights follow the latest results
        if self.league is not None:
            self.league.forget_all_but(self.pool.ids())
            row |= self.league.metrics(self.pool.ids())
        row["selfplay/promotions"] = float(self.promotions)
        return row

    def state_dict(self) -> dict[str, Any]:
        gate = list(self.gate.results) if self.gate is not None else []
        league = self.league.state_dict() if self.league is not None else {}
        return {
            **self.pool.state_dict(),
            "promotions": self.promotions,
            "gate_results": gate,
            "league_results": league,
        }

    def load_state_dict(self, state: Mapping[str, Any] | None) -> None:
        if state:
            self.pool.load_state_dict(state, self.encoder, self.mask_futile)
            self.promotions = int(state.get("promotions", 0))
            if self.gate is not None:
                self.gate.results.extend(bool(w) for w in state.get("gate_results", []))
            if self.league is not None:
                self.league.load_state_dict(state.get("league_results") or {})
