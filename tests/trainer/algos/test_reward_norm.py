"""Reward normalization: the running return scale per env stream, and its state on resume."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from memory_env import MEMORY_OVERRIDES
from omegaconf import OmegaConf

from trainer.__main__ import CONF_DIR
from trainer.algos.reward_norm import RewardNormalizer
from trainer.config import to_train_config
from trainer.run.checkpoint import load_checkpoint
from trainer.run.train import Trainer, train


def test_rewards_are_divided_by_the_std_of_each_streams_discounted_return() -> None:
    rng = np.random.default_rng(0)
    norm = RewardNormalizer(num_envs=3, gamma=0.9)
    returns, seen = np.zeros(3), []
    for t in range(2000):
        rewards = rng.normal(1.0, 2.0, size=3).astype(np.float32)
        done = np.array([t % 7 == 6, t % 11 == 10, False])
        scaled = norm(rewards, done)
        returns = returns * 0.9 + rewards
        seen.append(returns.copy())
        # the scale in use is the std of every discounted return seen so far
        assert scaled == pytest.approx(rewards / np.std(np.concatenate(seen)), rel=2e-2)
        returns[done] = 0.0
    assert norm.scale == pytest.approx(np.std(np.concatenate(seen)), rel=1e-3)
    assert scaled.dtype == np.float32


def test_large_rewards_are_clipped() -> None:
    norm = RewardNormalizer(num_envs=1, gamma=0.99, clip=5.0)
    for _ in range(50):
        norm(np.array([0.01]), np.array([True]))
    assert norm(np.array([1000.0]), np.array([True]))[0] == 5.0


@pytest.mark.integration
def test_normalization_state_survives_resume(tmp_path: Path) -> None:
    overrides = [*MEMORY_OVERRIDES, "algo.norm_reward=true", "env.num_envs=4"]
    overrides += ["algo.rollout_steps=16", "algo.epochs=1"]
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        first = compose("config", overrides=[*overrides, "total_steps=128"])
        second = compose("config", overrides=[*overrides, "total_steps=256", f"resume={tmp_path}"])
    train(first, tmp_path)
    saved = load_checkpoint(tmp_path)["reward_norm"]
    assert saved["count"] > 100 and saved["var"] > 0

    trainer = Trainer(
        to_train_config(second),
        tmp_path,
        OmegaConf.to_container(second),
        resume_from=tmp_path / "checkpoints" / "last.pt",
    )
    try:
        assert trainer.reward_norm is not None
        assert trainer.reward_norm.state_dict() == saved
        row = trainer.run()
    finally:
        trainer.close()
    assert row is not None and row["reward_scale"] > 0
    assert load_checkpoint(tmp_path)["reward_norm"]["count"] > saved["count"]
