"""The learning algorithms ``algo.name`` picks: each turns one collected rollout into an update.

The training loop (:mod:`trainer.run.train`) is the same for all of them: collect a rollout into
a :class:`trainer.algos.buffer.RolloutBuffer`, then ``learner.update(...)`` with the extra loss
terms of the moment (:mod:`trainer.algos.terms`), the policy-gradient weight (0 while cloning)
and the bf16 switch. A new algorithm is a config schema in :mod:`trainer.config`, a learner
class here and one :data:`ALGORITHMS` entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import torch

from trainer.algos.buffer import RolloutBuffer
from trainer.algos.episode_batch import EpisodeCarry
from trainer.algos.ppo import ppo_update
from trainer.algos.reinforce import reinforce_update
from trainer.algos.terms import LossTerm
from trainer.config import AlgoConfig, AlgoName, PPOConfig, ReinforceConfig


class Learner(Protocol):
    columns: tuple[str, ...]  # metrics columns of its own

    def update(
        self,
        policy: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        buffer: RolloutBuffer,
        *,
        terms: Sequence[LossTerm] = (),
        pg_coef: float = 1.0,
        autocast_bf16: bool = False,
    ) -> dict[str, float]: ...


class PPOLearner:
    """GAE over the rollout, then sequence PPO on its BPTT chunks (:mod:`trainer.algos.ppo`)."""

    columns: tuple[str, ...] = ()

    def __init__(self, cfg: PPOConfig, num_envs: int) -> None:
        self.cfg = cfg

    def update(
        self,
        policy: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        buffer: RolloutBuffer,
        *,
        terms: Sequence[LossTerm] = (),
        pg_coef: float = 1.0,
        autocast_bf16: bool = False,
    ) -> dict[str, float]:
        buffer.compute_returns(self.cfg.gamma, self.cfg.gae_lambda)
        return ppo_update(
            policy,  # type: ignore[arg-type]
            optimizer,
            buffer.chunks(),
            self.cfg,
            terms=terms,
            pg_coef=pg_coef,
            autocast_bf16=autocast_bf16,
        )


class ReinforceLearner:
    """REINFORCE on the episodes that ended in the rollout; unfinished ones are carried over
    to the next (:mod:`trainer.algos.episode_batch`, :mod:`trainer.algos.reinforce`)."""

    columns: tuple[str, ...] = ("episodes_trained", "carried_steps")

    def __init__(self, cfg: ReinforceConfig, num_envs: int) -> None:
        self.cfg = cfg
        self.carry = EpisodeCarry(num_envs)

    def update(
        self,
        policy: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        buffer: RolloutBuffer,
        *,
        terms: Sequence[LossTerm] = (),
        pg_coef: float = 1.0,
        autocast_bf16: bool = False,
    ) -> dict[str, float]:
        batch = self.carry.episodes(buffer)
        stats = {"episodes_trained": 0.0}
        if batch is not None:  # no episode ended yet: nothing to learn from
            stats = reinforce_update(
                policy,
                optimizer,
                batch,
                self.cfg,
                terms=terms,
                pg_coef=pg_coef,
                autocast_bf16=autocast_bf16,
            )
        stats["carried_steps"] = float(self.carry.carried_steps)
        return stats


ALGORITHMS: dict[str, type] = {AlgoName.ppo: PPOLearner, AlgoName.reinforce: ReinforceLearner}


def make_learner(cfg: AlgoConfig, num_envs: int) -> Learner:
    """The learner for ``cfg.name``."""
    return ALGORITHMS[cfg.name](cfg, num_envs)
