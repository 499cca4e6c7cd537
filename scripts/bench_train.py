#!/usr/bin/env python
"""Training throughput vs env-only throughput on the same envs, side by side, as JSON.

    python scripts/bench_train.py                       # +experiment=lstm_ppo, device=cpu
    python scripts/bench_train.py --rounds 3 --iterations 2 -- env.num_envs=8 algo.bptt=32

One vector env is built from the experiment's config and used for both measurements,
interleaved in ``--rounds`` rounds: (a) env-only: random legal actions for as many vector
steps as ``--iterations`` rollouts, (b) training: ``--iterations`` full iterations (rollout
with the batched policy + GAE + PPO update). SPS counts env steps (vector steps x num_envs)
per wall-clock second. ``ratio = median train SPS / median env-only SPS`` (goal >= 0.85 on
CPU). One warm-up iteration runs first and is not counted. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from trainer.config import to_train_config
from trainer.run.train import Trainer

REPO = Path(__file__).resolve().parent.parent


def env_only_sps(trainer: Trainer, vector_steps: int, rng: np.random.Generator) -> float:
    """Random legal actions on the trainer's envs; leaves the collector in sync."""
    envs, adapter = trainer.envs, trainer.adapter
    mask = trainer.collector.mask_np
    obs = None
    start = time.perf_counter()
    for _ in range(vector_steps):
        scores = rng.random(mask.shape) * mask  # uniform over legal actions
        obs, *_ = envs.step(scores.argmax(axis=1))
        _, mask = adapter.batch(obs)
    elapsed = time.perf_counter() - start
    trainer.collector.restart_from(obs)
    return vector_steps * envs.num_envs / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--experiment", default="lstm_ppo", help="the +experiment to build (default %(default)s)"
    )
    parser.add_argument(
        "--device", default="cpu", help="cpu | cuda | mps | auto (default %(default)s)"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="interleaved env-only/training rounds, medians reported (default %(default)s)",
    )
    parser.add_argument(
        "--iterations", type=int, default=2, help="rollouts per round (default %(default)s)"
    )
    parser.add_argument("overrides", nargs="*", help="extra Hydra overrides (after --)")
    args = parser.parse_args(argv)

    overrides = [
        f"+experiment={args.experiment}",
        f"device={args.device}",
        "tensorboard=false",
        *args.overrides,
    ]
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    typed = to_train_config(cfg)
    run_dir = Path(tempfile.mkdtemp(prefix="maple_bench_train_"))
    trainer = Trainer(typed, run_dir, OmegaConf.to_container(cfg, resolve=True))
    rng = np.random.default_rng(0)
    rounds = []
    try:
        trainer.train_iteration()  # warm-up: server, workers, allocator
        vector_steps = typed.algo.rollout_steps * args.iterations
        for _ in range(args.rounds):
            env_sps = env_only_sps(trainer, vector_steps, rng)
            rows = []
            start = time.perf_counter()
            for _ in range(args.iterations):
                rows.append(trainer.train_iteration())
            train_sps = vector_steps * trainer.envs.num_envs / (time.perf_counter() - start)
            update_s = sum(r["update_s"] for r in rows)
            rollout_s = sum(r["rollout_s"] for r in rows)
            rounds.append(
                {
                    "env_only_sps": env_sps,
                    "train_sps": train_sps,
                    "ratio": train_sps / env_sps,
                    "rollout_s": rollout_s,
                    "update_s": update_s,
                }
            )
    finally:
        trainer.close()
    env_med = statistics.median(r["env_only_sps"] for r in rounds)
    train_med = statistics.median(r["train_sps"] for r in rounds)
    result = {
        "experiment": args.experiment,
        "overrides": args.overrides,
        "device": str(trainer.device),
        "num_envs": typed.env.num_envs,
        "rollout_steps": typed.algo.rollout_steps,
        "bptt": typed.algo.bptt,
        "env": OmegaConf.to_container(cfg.env, resolve=True),
        "torch_threads": trainer.rollout_threads,
        "torch_update_threads": trainer.update_threads,
        "rounds": rounds,
        "env_only_sps_median": env_med,
        "train_sps_median": train_med,
        "ratio": train_med / env_med,
        "median_round_ratio": statistics.median(r["ratio"] for r in rounds),
        "update_share": statistics.median(
            r["update_s"] / (r["update_s"] + r["rollout_s"]) for r in rounds
        ),
        "machine": {
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "loadavg": os.getloadavg(),
            "torch": torch.__version__,
        },
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
