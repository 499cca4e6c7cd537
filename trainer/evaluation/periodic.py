"""Evaluation during training: :class:`PeriodicEvaluator`, every ``eval.every`` updates."""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from pathlib import Path
from typing import Any

import torch

from mapleenv.files import open_append
from mapleenv.spec import EnvSpec
from trainer.config import PeriodicEvalConfig, periodic_eval_problems
from trainer.config.spec_fields import spec_default
from trainer.evaluation.battles import evaluate_policy
from trainer.evaluation.output import results_json

log = logging.getLogger(__name__)


RUN_SETTINGS = (
    "battle_format",
    "team",
    "opponent_team",
    "encoder",
    "max_turns",
    "battle_minutes",
    "mask_futile",
    "backend",
    "server",
    "log_dir",
    "plugins",
)
"""The settings a run's evaluations keep from its spec: the game and how the policy sees
it, where battles run and how long one may last; the rest (its opponent, teacher, reward,
worker counts...) are ``EnvSpec``'s defaults."""


def evaluation_view(spec: EnvSpec) -> EnvSpec:
    """A run's checked spec as its evaluations play it (:data:`RUN_SETTINGS` kept, every
    other setting ``EnvSpec``'s default); still checked: no setting a check covers changes."""
    reset = {
        f.name: spec_default(f.name)
        for f in dataclasses.fields(EnvSpec)
        if f.init and f.name not in (*RUN_SETTINGS, "checked_for")
    }
    return dataclasses.replace(spec, **reset)


class PeriodicEvaluator:
    """Runs :func:`evaluate_policy` every ``cfg.every`` updates during training, on the
    run's spec as :func:`evaluation_view` gives it.

    :meth:`columns` are the metrics columns it fills (known at start, so the CSV header
    is stable); :meth:`maybe_run` returns them for due iterations (else ``{}``) and
    appends each evaluation to ``<run dir>/eval.jsonl``.
    """

    def __init__(
        self,
        cfg: PeriodicEvalConfig,
        env_cfg: Any,
        run_dir: str | Path,
        seed: int = 0,
        spec: EnvSpec | None = None,
    ):
        problems = periodic_eval_problems(cfg, env_cfg)
        if problems:
            raise ValueError("; ".join(problems))
        self.cfg, self.run_dir, self.seed = cfg, Path(run_dir), seed
        self.spec = None if spec is None else evaluation_view(spec)

    def columns(self) -> list[str]:
        if not self.cfg.every:
            return []
        return [
            f"eval/{name}/{key}"
            for name in self.cfg.opponents
            for key in ("win_rate", "ci_low", "ci_high")
        ]

    def due(self, iteration: int) -> bool:
        return bool(self.cfg.every) and iteration % self.cfg.every == 0

    def maybe_run(
        self,
        policy: torch.nn.Module,
        iteration: int,
        global_step: int,
        device: torch.device | str = "cpu",
    ) -> dict[str, float]:
        if not self.due(iteration):
            return {}
        assert self.spec is not None, "evaluations during training need the run's spec"
        t0 = time.perf_counter()
        results = evaluate_policy(
            policy,
            dataclasses.replace(self.spec, seed=self.seed + iteration),
            list(self.cfg.opponents),
            self.cfg.battles,
            num_envs=self.cfg.num_envs,
            sample=self.cfg.sample,
            device=device,
        )
        row: dict[str, float] = {}
        for r in results:
            low, high = r.interval
            row |= {
                f"eval/{r.opponent}/win_rate": r.win_rate,
                f"eval/{r.opponent}/ci_low": low,
                f"eval/{r.opponent}/ci_high": high,
            }
        document = results_json(
            results,
            iteration=iteration,
            global_step=global_step,
            seconds=round(time.perf_counter() - t0, 1),
        )
        with open_append(self.run_dir / "eval.jsonl") as f:
            f.write(json.dumps(document) + "\n")
        log.info(
            "eval at step %d: %s",
            global_step,
            ", ".join(f"{r.opponent} {r.win_rate:.0%}" for r in results),
        )
        return row
