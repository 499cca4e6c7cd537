"""The env workers' teacher is computed only while kickstarting uses it (issue #22): real
env workers and simulators, the teacher's calls counted in each worker."""

from __future__ import annotations

import csv
import os
import signal
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from trainer.__main__ import CONF_DIR
from trainer.config import to_train_config
from trainer.run.checkpoint import resolve_checkpoint
from trainer.run.train import Trainer

pytestmark = pytest.mark.integration

# 2 env workers x 16 steps per update; the kickstarting weight is 0 from step 64 on
OVERRIDES = [
    "+experiment=smoke",
    "env.num_envs=2",
    "env.teacher=heuristic",
    "algo.rollout_steps=16",
    "algo.kickstart_coef=1.0",
    "algo.kickstart_steps=64",
    "tensorboard=false",
    "checkpoint_every=0",
]


def make_trainer(run_dir: Path, *extra: str, resume: bool = False) -> Trainer:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("config", overrides=[*OVERRIDES, *extra])
    raw = OmegaConf.to_container(cfg, resolve=True)
    resume_from = resolve_checkpoint(str(run_dir)) if resume else None
    return Trainer(to_train_config(cfg), run_dir, raw, resume_from=resume_from)


def teacher_calls(trainer: Trainer) -> list[int]:
    return list(trainer.envs.call("teacher_calls"))


def assert_teacher_in_buffer(trainer: Trainer) -> None:
    """Every valid step of the last rollout has a legal teacher action (a step whose battle
    just ended has none)."""
    buf = trainer.buffer
    teacher = buf.teacher_actions
    assert (teacher >= 0).float().mean() > 0.8
    for t, n in (teacher >= 0).nonzero().tolist():
        assert buf.action_mask[t, n, teacher[t, n]]


def assert_no_teacher(trainer: Trainer, row: dict) -> None:
    assert (trainer.buffer.teacher_actions == -1).all()
    assert (trainer.collector.teacher_np == -1).all()  # the workers' current observations
    assert row["kickstart_coef"] == 0.0
    assert "kickstart_loss" not in row and "teacher_agreement" not in row
    assert all(np.isfinite(v) for k, v in row.items() if k in ("policy_loss", "value_loss"))


def kill_worker(trainer: Trainer, index: int) -> None:
    process = trainer.envs.unwrapped.processes[index]
    os.kill(process.pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while process.is_alive() and time.monotonic() < deadline:
        process.join(0.1)
    assert not process.is_alive()


@pytest.mark.timeout(400)
def test_the_teacher_is_computed_until_kickstarting_ends_then_never(tmp_path: Path) -> None:
    trainer = make_trainer(tmp_path)
    try:
        assert trainer.teacher.active and trainer.teacher.off_from == 64
        trainer.train_iteration()  # step 0 -> 32: cloning weight 1
        assert_teacher_in_buffer(trainer)
        first = teacher_calls(trainer)
        assert first and all(c >= 16 for c in first)  # each worker asked at each decision
        row = trainer.train_iteration()  # 32 -> 64: the weight reaches 0, teacher off
        assert row["kickstart_coef"] == 0.5 and 0 <= row["teacher_agreement"] <= 1
        assert not trainer.teacher.active
        off = teacher_calls(trainer)
        assert all(b > a for a, b in zip(first, off, strict=True))
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # e.g. a mean over no teacher steps
            row = trainer.train_iteration()
        assert_no_teacher(trainer, row)
        assert teacher_calls(trainer) == off  # no worker asked its teacher again

        # a worker replaced after a crash starts with the teacher on; the next update ends it
        kill_worker(trainer, 1)
        row = trainer.train_iteration()
        assert trainer.envs.unwrapped.replaced_workers == [1]
        assert (trainer.buffer.teacher_actions == -1).all()  # its choices are not learned from
        replaced = teacher_calls(trainer)
        assert replaced[0] == off[0]
        row = trainer.train_iteration()
        assert_no_teacher(trainer, row)
        assert teacher_calls(trainer) == replaced
    finally:
        trainer.close()


@pytest.mark.timeout(400)
def test_a_run_resumed_past_kickstarting_starts_without_teacher(tmp_path: Path) -> None:
    first = make_trainer(tmp_path, "total_steps=96")
    try:
        first.run()  # 32, 64 (teacher off from here), 96
    finally:
        first.close()
    resumed = make_trainer(tmp_path, "total_steps=128", resume=True)
    try:
        assert resumed.global_step == 96 and not resumed.teacher.active
        assert (resumed.collector.teacher_np == -1).all()  # the first observations already
        resumed.run()
        assert teacher_calls(resumed) == [0, 0]
        assert (resumed.buffer.teacher_actions == -1).all()
    finally:
        resumed.close()
    with (tmp_path / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [int(r["global_step"]) for r in rows] == [32, 64, 96, 128]
    assert all(None not in r and None not in r.values() for r in rows)  # no ragged rows
    assert [float(r["kickstart_coef"]) for r in rows] == [1.0, 0.5, 0.0, 0.0]
    for r in rows[:2]:
        assert float(r["kickstart_loss"]) > 0 and 0 <= float(r["teacher_agreement"]) <= 1
    for r in rows[2:]:  # no teacher: the columns stay, empty
        assert r["kickstart_loss"] == "" and r["teacher_agreement"] == ""
        assert r["policy_loss"] != "" and r["bc"] == "0.0"
