"""Evaluation during training: :class:`PeriodicEvaluator`, every ``eval.every`` updates."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import torch

from mapleenv.files import open_append
from trainer.config import PeriodicEvalConfig, periodic_eval_problems
from trainer.evaluation.battles import evaluate_policy
from trainer.evaluation.output import results_json

log = logging.getLogger(__name__)


class PeriodicEvaluator:
    """Runs :func:`evaluate_policy` every ``cfg.every`` updates during training.

    :meth:`columns` are the metrics columns it fills (known at start, so the CSV header
    is stable); :meth:`maybe_run` returns them for due iterations (else ``{}``) and
    appends each evaluation to ``<run dir>/eval.jsonl``.
    """

    def __init__(self, cfg: PeriodicEvalConfig, env_cfg: Any, run_dir: str | Path, seed: int = 0):
        problems = periodic_eval_problems(cfg, env_cfg)
        if problems:
            raise ValueError("; ".join(problems))
        self.cfg, self.env_cfg, self.run_dir, self.seed = cfg, env_cfg, Path(run_dir), seed

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
        env = self.env_cfg
        t0 = time.perf_counter()
        results = evaluate_policy(
            policy,
            list(self.cfg.opponents),
            self.cfg.battles,
            battle_format=env.battle_format,
            team=env.team,
            opponent_team=env.opponent_team,
            encoder=env.encoder,
            num_envs=self.cfg.num_envs,
            sample=self.cfg.sample,
            device=device,
            seed=self.seed + iteration,
            max_turns=env.max_turns,
            mask_futile=bool(getattr(env, "mask_futile", False)),
            backend=env.backend,
            server_url=env.server_url,
            log_dir=self.run_dir / "showdown",
            plugins=list(getattr(env, "plugins", ())),
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
