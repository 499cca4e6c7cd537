"""Sequence REINFORCE: returns and loss by hand, whole episodes out of rollouts (carried over,
trained once, never mixed), truncated BPTT, and learning the memory task."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_dir
from memory_env import MEMORY_ENV_ID

from mapleenv.policies import build_policy
from trainer.__main__ import CONF_DIR
from trainer.algos.buffer import RolloutBuffer
from trainer.algos.episode_batch import EpisodeCarry
from trainer.algos.reinforce import discounted_returns, reinforce_losses, replay_episodes
from trainer.config import ModelConfig, ReinforceConfig
from trainer.run.train import train

REINFORCE_MEMORY = [
    "+experiment=lstm_reinforce",
    "env=gym",
    f"env.id={MEMORY_ENV_ID}",
    "env.num_envs=8",
    "device=cpu",
    "algo.rollout_steps=32",
    "algo.lr=2e-3",
    "algo.ent_coef=0.0",
    "tensorboard=false",
    "log_every=1000",
]


def test_discounted_returns_by_hand() -> None:
    # two episodes in columns: [1, 0, 2] ends (terminated); [1, 1] truncated, bootstrap 4
    rewards = torch.tensor([[1.0, 1.0], [0.0, 1.0], [2.0, 0.0]])
    valid = torch.tensor([[1.0, 1.0], [1.0, 1.0], [1.0, 0.0]])
    returns = discounted_returns(rewards, valid, torch.tensor([0.0, 4.0]), gamma=0.5)
    # G2 = 2, G1 = 0 + .5 * 2 = 1, G0 = 1 + .5 * 1 = 1.5; G1' = 1 + .5 * 4 = 3, G0' = 2.5
    assert returns.tolist() == [[1.5, 2.5], [1.0, 3.0], [2.0, 0.0]]


def test_reinforce_loss_by_hand() -> None:
    logp = torch.tensor([[-0.5], [-1.0], [-2.0]])
    values = torch.tensor([[1.0], [0.5], [9.0]])
    returns = torch.tensor([[2.0], [1.5], [9.0]])
    entropy = torch.tensor([[0.3], [0.6], [9.0]])
    valid = torch.tensor([[1.0], [1.0], [0.0]])  # the third step is padding
    cfg = ReinforceConfig(norm_adv=False, ent_coef=0.1, vf_coef=0.5)
    out = reinforce_losses(
        logp=logp, values=values, returns=returns, entropy=entropy, valid=valid, cfg=cfg
    )
    # advantages 1.0 and 1.0: policy loss -(-0.5 * 1 + -1 * 1) / 2 = 0.75
    assert float(out.policy_loss) == pytest.approx(0.75)
    assert float(out.value_loss) == pytest.approx(0.5 * (1.0 + 1.0) / 2)
    assert float(out.entropy) == pytest.approx(0.45)
    assert float(out.loss) == pytest.approx(0.75 - 0.1 * 0.45 + 0.5 * 0.5)
    plain = reinforce_losses(
        logp=logp,
        values=values,
        returns=returns,
        entropy=entropy,
        valid=valid,
        cfg=ReinforceConfig(norm_adv=False, baseline=False),
    )
    assert float(plain.policy_loss) == pytest.approx((0.5 * 2.0 + 1.0 * 1.5) / 2)
    assert float(plain.value_loss) == 0.0
    # the baseline's value does not leak into the policy gradient
    logp.requires_grad_(True)
    values.requires_grad_(True)
    out = reinforce_losses(
        logp=logp, values=values, returns=returns, entropy=entropy, valid=valid, cfg=cfg
    )
    _, grad = torch.autograd.grad(out.policy_loss, [logp, values], allow_unused=True)
    assert grad is None


def fill(buffer: RolloutBuffer, first_id: int, dones: dict[int, list[int]]) -> int:
    """Give every step a unique id (obs[..., 0]) and mark the ``dones`` (env -> steps)."""
    steps, envs = buffer.steps, buffer.num_envs
    ids = torch.arange(first_id, first_id + steps * envs, dtype=torch.float32).view(steps, envs)
    buffer.obs[..., 0] = ids
    buffer.actions[:] = 0
    buffer.action_mask[:] = True
    buffer.rewards[:] = 1.0
    buffer.terminated[:] = False
    buffer.truncated[:] = False
    for env, ts in dones.items():
        buffer.terminated[ts, env] = True
    return first_id + steps * envs


def test_episodes_are_carried_over_whole_trained_once_and_never_mixed() -> None:
    buffer = RolloutBuffer(4, 2, 3, 2, 0, None, torch.device("cpu"))
    carry = EpisodeCarry(2)
    # rollout 1: env 0 ends an episode at t=1; env 1 ends none
    next_id = fill(buffer, 0, {0: [1]})
    b1 = carry.episodes(buffer)
    assert b1 is not None and b1.num_episodes == 1
    assert b1.obs[:2, 0, 0].tolist() == [0, 2]  # env 0's steps 0, 1 (ids step * 2 + env)
    assert carry.carried_steps == 2 + 4
    # rollout 2: env 0 ends at t=0 and t=3; env 1 at t=2
    fill(buffer, next_id, {0: [0, 3], 1: [2]})
    b2 = carry.episodes(buffer)
    assert b2 is not None and b2.num_episodes == 3
    episodes = [b2.obs[: int(n), e, 0].tolist() for e, n in enumerate(b2.lengths)]
    # env 0: carried [4, 6] + [8]; then [10, 12, 14]; env 1: carried [1, 3, 5, 7] + [9, 11, 13]
    assert episodes == [[4, 6, 8], [10, 12, 14], [1, 3, 5, 7, 9, 11, 13]]
    assert b2.episode_start[0].tolist() == [1, 1, 1] and b2.episode_start[1:].sum() == 0
    assert carry.carried_steps == 1  # env 1's step 3 (id 15)
    seen = b1.obs[:2, 0, 0].tolist() + [i for ep in episodes for i in ep]
    assert len(seen) == len(set(seen))  # every step trained once
    # padding is invalid and the rewards / bootstrap of a terminated episode are plain
    assert b2.valid.sum(0).tolist() == [3, 3, 7]
    assert b2.bootstrap.tolist() == [0, 0, 0]


def test_a_truncated_episode_bootstraps_from_its_final_value() -> None:
    buffer = RolloutBuffer(3, 1, 3, 2, 0, None, torch.device("cpu"))
    fill(buffer, 0, {})
    buffer.truncated[2, 0] = True
    buffer.final_values[2, 0] = 5.0
    buffer.has_final_value[2, 0] = True
    batch = EpisodeCarry(1).episodes(buffer)
    assert batch is not None and batch.truncated.tolist() == [True]
    assert batch.bootstrap.tolist() == [5.0]


@pytest.mark.parametrize("bptt, reaches_start", [(0, True), (2, False)])
def test_bptt_truncates_the_gradient_not_the_state(bptt: int, reaches_start: bool) -> None:
    torch.manual_seed(0)
    policy = build_policy(3, 2, ModelConfig(kind="lstm", encoder_sizes=[8], hidden_size=8))
    buffer = RolloutBuffer(5, 1, 3, 2, 0, None, torch.device("cpu"))
    fill(buffer, 0, {0: [4]})
    buffer.obs.normal_()
    batch = EpisodeCarry(1).episodes(buffer)
    assert batch is not None
    batch.obs.requires_grad_(True)
    logits, _ = replay_episodes(policy, batch, bptt)
    (grad,) = torch.autograd.grad(logits[4].sum(), batch.obs)
    assert bool(grad[0].abs().sum() > 0) is reaches_start  # step 4 sees step 0's input
    # the state itself passes between windows: same outputs either way
    full, _ = replay_episodes(policy, batch, 0)
    assert torch.allclose(logits, full, atol=1e-6)


def run(tmp_path: Path, *overrides: str) -> list[dict[str, str]]:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("config", overrides=[*REINFORCE_MEMORY, *overrides])
    train(cfg, tmp_path)
    with (tmp_path / "metrics.csv").open() as f:
        return list(csv.DictReader(f))


def late_return(rows: list[dict[str, str]], last: int = 20) -> float:
    values = [float(r["episode_return"]) for r in rows[-last:] if r["episode_return"]]
    return float(np.mean(values))


@pytest.mark.slow
def test_whole_episode_lstm_learns_the_memory_task_that_an_mlp_cannot(tmp_path: Path) -> None:
    # recall a cue 4 steps back: +1 / -1 at the query; a memoryless policy's optimum is 0
    steps = ("total_steps=24576", "seed=1")  # 96 updates of 256 steps
    lstm = run(tmp_path / "lstm", "model=lstm", "algo.bptt=0", *steps)
    mlp = run(tmp_path / "mlp", "model=mlp", *steps)
    assert late_return(lstm) > 0.8, [r["episode_return"] for r in lstm[-20:]]
    assert late_return(mlp) < 0.4
    assert {"episodes_trained", "carried_steps"} <= lstm[0].keys()
    assert all(float(r["episodes_trained"]) > 0 for r in lstm)
