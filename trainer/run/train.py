"""The training loop: rollout -> update (sequence PPO or REINFORCE), metrics, checkpoints."""

from __future__ import annotations

import contextlib
import logging
import math
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium.vector import VectorEnv
from omegaconf import DictConfig, OmegaConf

from mapleenv.files import write_atomic
from mapleenv.policies import build_policy, check_network, policy_spec, to_plain
from mapleenv.spec import EnvSpec
from trainer.algos import make_learner
from trainer.algos.buffer import RolloutBuffer
from trainer.algos.reward_norm import RewardNormalizer
from trainer.algos.terms import LossTerm, aux_term, kickstart_term
from trainer.config import ConfigError, RunConfig, TrainConfig, to_run_config
from trainer.envs.episodes import OpponentStats, win_rate_columns
from trainer.envs.spaces import ObsAdapter
from trainer.envs.vector import (
    EnvPoolFailed,
    EnvWorkersFailing,
    EnvWorkerStalled,
    make_envs,
    run_spec,
    terminate_envs,
    worker_failure,
)
from trainer.evaluation import PeriodicEvaluator
from trainer.run.checkpoint import (
    CHECKPOINT_DIR,
    LAST,
    check_pool,
    load_checkpoint,
    remove_stale_temporaries,
    resolve_checkpoint,
    rng_state,
    run_dir_of,
    save_checkpoint,
    set_rng_state,
    state_must_fit,
)
from trainer.run.device import resolve_device
from trainer.run.folder import check_run_folder
from trainer.run.init_from import init_weights
from trainer.run.metrics import MetricsLogger
from trainer.run.progress import ConsoleProgress, RunClock, summary_line
from trainer.run.rollout import EpisodeStats, RolloutCollector
from trainer.run.search_teacher import SearchTeacherLog
from trainer.run.selfplay import SelfPlay
from trainer.run.teacher import TeacherSwitch, kickstart_weight
from trainer.run.threads import cpu_cores, sigint_ignored, torch_threads

log = logging.getLogger(__name__)

KICKSTART_COLUMNS = ("bc", "kickstart_coef", "kickstart_loss", "teacher_agreement")
AUX_COLUMNS = ("aux_loss", "aux_accuracy")


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else math.nan


class Trainer:
    """Owns the envs, policy, optimizer, buffer and collector of one run.

    ``envs`` may be given (e.g. by a benchmark); otherwise they are built from the config
    and closed by :meth:`close`. ``spec``: the checked ``EnvSpec`` of ``env.*`` from
    :func:`trainer.config.to_run_config` (without one it is built and checked here); the
    envs and the periodic evaluations are built from it.
    """

    def __init__(
        self,
        cfg: TrainConfig,
        run_dir: str | Path,
        raw_config: dict[str, Any],
        envs: VectorEnv | None = None,
        resume_from: Path | None = None,
        spec: EnvSpec | None = None,
    ) -> None:
        self.cfg, self.run_dir, self.raw_config = cfg, Path(run_dir), raw_config
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._seed_and_threads()
        ckpt = load_checkpoint(resume_from) if resume_from is not None else None
        self._start_counters(ckpt)
        self._owns_envs = envs is None
        self.spec = run_spec(cfg.env, spec, cfg.seed, self.run_dir / "showdown")
        self.envs = envs if envs is not None else make_envs(cfg.env, self.spec)
        try:  # from here on, a failure closes the envs (and the servers they started)
            self._watch_envs()
            self._build_learner(ckpt, resume_from)
            self._build_rollout()
        except BaseException:
            self.close()
            raise

    def _seed_and_threads(self) -> None:
        """Seeds, torch threads (the rollout shares the CPU with the envs; the update runs
        while they wait) and the device."""
        cfg = self.cfg
        random.seed(cfg.seed)
        np.random.seed(cfg.seed)
        torch.manual_seed(cfg.seed)
        cores = cpu_cores()
        self.rollout_threads = cfg.torch_threads or max(1, min(8, cores // 2))
        self.update_threads = cfg.torch_update_threads or max(1, min(16, cores))
        torch.set_num_threads(self.rollout_threads)
        self.device = resolve_device(cfg.device)
        self.bf16 = cfg.algo.bf16 and self.device.type == "cuda"
        if cfg.algo.bf16 and not self.bf16:
            log.warning("algo.bf16 needs CUDA; training in float32 on %s", self.device)

    def _start_counters(self, ckpt: dict[str, Any] | None) -> None:
        """Steps, iterations and training time: zero, or where a resumed run stopped."""
        self.resumed = ckpt is not None
        self.global_step = int(ckpt["global_step"]) if ckpt else 0
        self.iteration = int(ckpt["iteration"]) if ckpt else 0
        # seconds of training loop in all segments so far (max_minutes counts these)
        self.train_seconds = float(ckpt.get("train_seconds", 0.0)) if ckpt else 0.0
        # the longest iteration so far: the budget stops the run before one more would pass it
        self.iteration_seconds = float(ckpt.get("iteration_seconds", 0.0)) if ckpt else 0.0

    def _watch_envs(self) -> None:
        """Per-opponent win rates, self-play pushes and periodic evaluation around the envs
        (trainer.envs.episodes / trainer.run.selfplay / trainer.evaluation)."""
        cfg = self.cfg
        opponents = win_rate_columns(getattr(cfg.env, "opponent", None))
        self.envs = OpponentStats(self.envs, opponents)
        self.selfplay = SelfPlay.for_env(cfg.selfplay, cfg.env, self.envs)
        self.evaluator = PeriodicEvaluator(cfg.eval, cfg.env, self.run_dir, cfg.seed, self.spec)
        self.adapter = ObsAdapter(self.envs.single_observation_space, self.envs.single_action_space)
        if cfg.algo.kickstart_coef > 0 and not self.adapter.has_teacher:
            raise ValueError(
                "algo.kickstart_coef > 0 needs a teacher: set env.teacher (e.g. heuristic)"
            )
        classes = self.adapter.aux_classes
        if cfg.algo.aux_coef > 0 and not 0 < classes <= cfg.model.aux_classes:
            raise ValueError(
                f"algo.aux_coef > 0 needs observations with opponent_action (env.kind=showdown) "
                f"and model.aux_classes >= their {classes} classes, got {cfg.model.aux_classes}"
            )
        self.teacher = TeacherSwitch(cfg.algo, self.envs, self.adapter.has_teacher)
        self.teacher.update(self.global_step)  # a resumed run past kickstarting: off at once
        self.search = SearchTeacherLog(cfg, self.envs, self.adapter.has_search_teacher)

    def _build_learner(self, ckpt: dict[str, Any] | None, resume_from: Path | None) -> None:
        """Policy, optimizer, learner and reward normalizer, restored from ``ckpt`` when
        resuming; then the self-play pool starts."""
        cfg = self.cfg
        self.policy = build_policy(self.adapter.obs_dim, self.adapter.n_actions, cfg.model)
        self.policy.to(self.device)
        self.optimizer = torch.optim.Adam(
            self.policy.parameters(), lr=cfg.algo.lr, eps=cfg.algo.adam_eps
        )
        self.learner = make_learner(cfg.algo, self.envs.num_envs)
        self.reward_norm = (
            RewardNormalizer(self.envs.num_envs, cfg.algo.gamma) if cfg.algo.norm_reward else None
        )
        if ckpt is not None:
            self._restore(ckpt, resume_from)
        elif cfg.init_from:
            init_weights(self.policy, cfg.init_from, self.spec.encoder)  # before self-play
        if self.selfplay is not None:
            with state_must_fit(str(resume_from)) if ckpt else contextlib.nullcontext():
                self.selfplay.load_state_dict(ckpt.get("selfplay") if ckpt else None)
            self.selfplay.start(self.policy)
        log.info(
            "policy: %s, obs %d, actions %d, %d parameters, torch threads %d (rollout), "
            "%d (update)",
            cfg.model.kind,
            self.adapter.obs_dim,
            self.adapter.n_actions,
            sum(p.numel() for p in self.policy.parameters()),
            self.rollout_threads,
            self.update_threads,
        )

    def _build_rollout(self) -> None:
        """The rollout buffer and the collector that fills it."""
        cfg = self.cfg
        hidden_shape = (
            (cfg.model.num_layers, self.policy.state_size) if self.policy.recurrent else None
        )
        self.buffer = RolloutBuffer(
            cfg.algo.rollout_steps,
            self.envs.num_envs,
            self.adapter.obs_dim,
            self.adapter.n_actions,
            cfg.algo.bptt,
            hidden_shape,
            self.device,
        )
        self.collector = RolloutCollector(
            self.envs,
            self.policy,
            self.adapter,
            self.device,
            seed=cfg.seed + self.iteration,
            reward_transform=self.reward_norm,
        )

    def _restore(self, ckpt: dict[str, Any], path: Path | None) -> None:
        if ckpt["policy"] != to_plain(policy_spec(self.policy)):
            raise ConfigError(
                f"checkpoint {path} has a different model/obs/action spec than this config: "
                f"{ckpt['policy']} vs {policy_spec(self.policy)}"
            )
        check_network(ckpt, str(path))  # weights that do not fit: one line, not a traceback
        check_pool(ckpt, str(path))
        self.policy.load_state_dict(ckpt["model"])
        with state_must_fit(str(path)):
            self.optimizer.load_state_dict(ckpt["optimizer"])
            if self.reward_norm is not None and ckpt.get("reward_norm"):
                self.reward_norm.load_state_dict(ckpt["reward_norm"])
            set_rng_state(ckpt["rng"])
            self.search.load_state_dict(ckpt.get("search_teacher"))
        log.info(
            "resumed from %s at global step %d (iteration %d)",
            path,
            self.global_step,
            self.iteration,
        )

    def checkpoint_payload(self) -> dict[str, Any]:
        return {
            "model": self.policy.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "global_step": self.global_step,
            "iteration": self.iteration,
            "train_seconds": self.train_seconds,
            "iteration_seconds": self.iteration_seconds,
            "config": self.raw_config,
            "policy": policy_spec(self.policy),
            "rng": rng_state(),
            "selfplay": self.selfplay.state_dict() if self.selfplay is not None else None,
            "reward_norm": self.reward_norm.state_dict() if self.reward_norm is not None else None,
            "search_teacher": self.search.state_dict(),
        }

    def save(self, name: str = LAST) -> Path:
        path = save_checkpoint(self.run_dir / CHECKPOINT_DIR / name, self.checkpoint_payload())
        log.debug("checkpoint %s at step %d", path, self.global_step)
        return path

    def progress(self) -> float:
        """How far the run is, in [0, 1]: steps over ``total_steps`` or training time over
        ``max_minutes``, whichever is further (the run ends at 1)."""
        done = self.global_step / self.cfg.total_steps
        if self.cfg.max_minutes is not None:
            done = max(done, self.train_seconds / (60.0 * self.cfg.max_minutes))
        return min(done, 1.0)

    def budget_left(self) -> bool:
        """Whether another iteration fits: the run must not pass ``total_steps`` or the
        ``max_minutes`` budget, so it stops when one more iteration as long as the longest so
        far would end past it."""
        if self.progress() >= 1.0:
            return False
        if self.cfg.max_minutes is None:
            return True
        return self.train_seconds + self.iteration_seconds <= 60.0 * self.cfg.max_minutes

    def current_lr(self) -> float:
        if not self.cfg.algo.anneal_lr:
            return self.cfg.algo.lr
        return self.cfg.algo.lr * (1.0 - self.progress())

    def train_iteration(self) -> dict[str, Any]:
        """One rollout and one update (``algo.name``); returns the metrics row."""
        algo = self.cfg.algo
        lr = self.current_lr()
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        t0 = time.perf_counter()
        self.policy.eval()
        stats: EpisodeStats = self.collector.collect(self.buffer)
        if self.adapter.has_teacher and not self.teacher.active:
            # teacher off: not even the rollout's first step (observed while it was on) or a
            # replaced worker's steps before its switch count
            self.buffer.teacher_actions.fill_(-1)
        t1 = time.perf_counter()
        self.policy.train()
        kickstart = kickstart_weight(self.cfg.algo, self.global_step)
        cloning = self.global_step < algo.bc_steps
        terms: list[LossTerm] = [kickstart_term(kickstart), *self.search.terms()]
        if algo.aux_coef > 0:  # PPO only (a config check)
            terms.append(aux_term(algo.aux_coef))
        with torch_threads(self.update_threads, then=self.rollout_threads):
            update = self.learner.update(
                self.policy,
                self.optimizer,
                self.buffer,
                terms=terms,
                pg_coef=0.0 if cloning else 1.0,
                autocast_bf16=self.bf16,
            )
        if self.adapter.has_teacher:
            update["bc"] = float(cloning)
            update["kickstart_coef"] = kickstart
        if self.reward_norm is not None:
            update["reward_scale"] = self.reward_norm.scale
        update |= self.search.after_rollout()
        t2 = time.perf_counter()
        steps = algo.rollout_steps * self.envs.num_envs
        self.global_step += steps
        self.iteration += 1
        self.teacher.update(self.global_step)
        if self.selfplay is not None:
            update |= self.selfplay.after_update(
                self.policy, self.iteration, self.envs.pop_snapshot_results()
            )
        return {
            "iteration": self.iteration,
            "global_step": self.global_step,
            "sps": steps / (t2 - t0),
            "episodes": len(stats.returns),
            "episodes_aborted": stats.aborted,
            "episode_return": _mean(stats.returns),
            "episode_length": _mean(stats.lengths),
            "win_rate": _mean(stats.wins),
            "lr": lr,
            "rollout_s": t1 - t0,
            "update_s": t2 - t1,
            **update,
            **self.envs.pop_win_rates(),
        }

    def run(self) -> dict[str, Any] | None:
        """Train until ``total_steps`` or the ``max_minutes`` budget; Ctrl-C saves ``last.pt`` and
        re-raises."""
        metrics = MetricsLogger(
            self.run_dir,
            tensorboard=self.cfg.tensorboard,
            extra_columns=(
                *self.envs.columns,
                *self.evaluator.columns(),
                *(KICKSTART_COLUMNS if self.adapter.has_teacher else ()),
                *(AUX_COLUMNS if self.cfg.algo.aux_coef > 0 else ()),
                *self.search.columns,
                *self.learner.columns,
                *(("reward_scale",) if self.reward_norm is not None else ()),
                *(self.selfplay.columns if self.selfplay is not None else ()),
            ),
            through_iteration=self.iteration if self.resumed else None,
        )
        start = time.perf_counter()
        seconds_before = self.train_seconds
        clock = RunClock(
            self.cfg.total_steps, self.cfg.max_minutes, self.global_step, seconds_before
        )
        progress = ConsoleProgress(clock)
        row = None
        try:
            while self.budget_left():
                row = self.train_iteration()
                seconds = seconds_before + time.perf_counter() - start
                self.iteration_seconds = max(self.iteration_seconds, seconds - self.train_seconds)
                self.train_seconds = seconds
                row |= self.evaluator.maybe_run(
                    self.policy, self.iteration, self.global_step, self.device
                )
                row["wall_s"] = time.perf_counter() - start
                metrics.write(row)
                progress.update(row, self.train_seconds)
                self.save()
                if self.cfg.checkpoint_every and self.iteration % self.cfg.checkpoint_every == 0:
                    self.save(f"step_{self.global_step:010d}.pt")
                if self.iteration % self.cfg.log_every == 0 or not self.budget_left():
                    status = clock.status(self.global_step, self.train_seconds)
                    log.info("iter %d | %s", self.iteration, summary_line(row, status))
        except (EnvWorkerStalled, EnvPoolFailed, EnvWorkersFailing):
            self._interrupted = True  # hung or blocked workers: terminate, don't wait
            raise
        except (EOFError, ConnectionError) as exc:  # a worker's pipe closed mid-step
            failure = worker_failure(self.envs, exc)
            if failure is None:
                raise
            self._interrupted = True  # the dead workers' pipes cannot be closed politely
            raise failure from exc
        except KeyboardInterrupt:
            self._interrupted = True
            with sigint_ignored():  # a second Ctrl-C must not break the final save
                progress.stop()
                path = self.save()
            log.warning("interrupted at step %d; saved %s", self.global_step, path)
            raise
        finally:
            progress.stop()
            metrics.close()
        log.info(
            "done: %d steps in %.1f min of training; checkpoint %s",
            self.global_step,
            self.train_seconds / 60,
            self.run_dir / CHECKPOINT_DIR / LAST,
        )
        return row

    def close(self) -> None:
        """Close the envs; after an interrupt the workers are terminated, not waited for
        (a step may be pending, and Ctrl-C may have reached them too)."""
        if self._owns_envs and getattr(self, "envs", None) is not None:
            try:
                if getattr(self, "_interrupted", False):
                    terminate_envs(self.envs)
                else:
                    self.envs.close()
            except Exception as exc:  # a worker that died on Ctrl-C must not hide the real error
                log.warning("closing envs failed: %r", exc)
            self.envs = None


def train(
    cfg: DictConfig, run_dir: str | Path, checked: RunConfig | None = None
) -> dict[str, Any] | None:
    """Validate ``cfg`` (``checked``: already done, by the CLI's preflight), resolve
    ``resume``, train, close. Returns the last metrics row."""
    typed, spec = checked if checked is not None else to_run_config(cfg)
    run_dir = Path(run_dir)
    resume_from = None
    if typed.resume:
        resume_from = resolve_checkpoint(typed.resume)
        run_dir = run_dir_of(resume_from)
        log.info("resume: continuing run dir %s", run_dir)
    check_run_folder(run_dir)  # the preflight's check, for callers of this function too
    run_dir.mkdir(parents=True, exist_ok=True)
    log.info("run dir: %s", run_dir)
    remove_stale_temporaries(run_dir / CHECKPOINT_DIR)
    raw = OmegaConf.to_container(cfg, resolve=True)
    trainer = Trainer(typed, run_dir, raw, resume_from=resume_from, spec=spec)
    try:
        # only now: a resume whose checkpoint this config cannot load must not overwrite it
        write_atomic(run_dir / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
        return trainer.run()
    finally:
        trainer.close()
