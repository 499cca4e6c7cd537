"""PPO on a doubles-shaped policy (the pair head over 47 * 47 joint actions, or the attention
policy's per-slot heads): replaying a recorded rollout gives exactly the log-probs it sampled
under, so the first epoch's ratio is 1."""

from __future__ import annotations

import pytest
import torch

from mapleenv.actions.doubles import action_space_size, slot_space_size
from mapleenv.encoders.doubles.entities import LAYOUT
from mapleenv.policies import PairHead, sample_actions
from trainer.algos.buffer import RolloutBuffer
from trainer.algos.ppo import evaluate_chunks, ppo_losses, ppo_update
from trainer.config import ModelConfig, PPOConfig
from trainer.policy import build_policy

CPU = torch.device("cpu")
S, A = slot_space_size(9), action_space_size(9)
OBS, ENVS, STEPS, BPTT = 24, 4, 20, 8  # the last chunk is padded


def joint_masks(generator: torch.Generator) -> torch.Tensor:
    """``[ENVS, S * S]`` doubles-like masks: each slot's legal sub-actions, both slots never
    switching to one mon, some pairs legal apart but not together; pass-pass always legal."""
    first = torch.rand(ENVS, S, 1, generator=generator) < 0.4
    second = torch.rand(ENVS, 1, S, generator=generator) < 0.4
    joint = first & second & (torch.rand(ENVS, S, S, generator=generator) < 0.8)
    joint[:, range(1, 7), range(1, 7)] = False
    joint[:, 0, 0] = True
    return joint.reshape(ENVS, A)


def record(kind: str) -> tuple[torch.nn.Module, RolloutBuffer]:
    """A rollout of random observations and masks, acted on by the policy exactly as the
    collector does (sample, store log-prob, value and chunk-start states)."""
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(1)
    cfg = ModelConfig(kind=kind, encoder_sizes=[32], hidden_size=16, num_layers=2, token_size=16)
    obs_dim = LAYOUT.size if kind == "attention" else OBS  # attention reads doubles3's tokens
    policy = build_policy(obs_dim, A, cfg)
    head = policy if kind == "attention" else policy.policy_head[-1]
    assert kind == "attention" or isinstance(head, PairHead)
    with torch.no_grad():  # a pair term that is not zero, as after some training
        head.u2.weight.normal_(0.0, 0.3, generator=generator)
    hidden_shape = (2, policy.state_size) if policy.recurrent else None
    buffer = RolloutBuffer(STEPS, ENVS, obs_dim, A, BPTT, hidden_shape, CPU)
    starts = torch.rand(STEPS + 1, ENVS, generator=generator) < 0.15
    hidden = tuple(torch.randn(x.shape, generator=generator) for x in policy.initial_state(ENVS))
    for t in range(STEPS):
        buffer.obs[t] = torch.rand(ENVS, obs_dim, generator=generator).round()
        buffer.action_mask[t] = joint_masks(generator)
        buffer.episode_start[t] = starts[t].float()
        if buffer.is_chunk_start(t):
            buffer.store_chunk_hidden(t, hidden)
        with torch.no_grad():
            logits, value, hidden = policy(
                buffer.obs[t], buffer.action_mask[t], hidden, buffer.episode_start[t]
            )
        actions, logp = sample_actions(logits, generator)
        buffer.actions[t], buffer.logp[t], buffer.values[t] = actions, logp, value
        buffer.rewards[t] = torch.rand(ENVS, generator=generator).numpy()
        buffer.terminated[t] = starts[t + 1].numpy()
    assert starts[1:BPTT].any(), "the case must have episode starts inside a chunk"
    buffer.compute_returns(0.99, 0.95)
    return policy, buffer


@pytest.mark.parametrize("kind", ["lstm", "mlp", "attention"])
def test_first_epoch_ratio_is_exactly_one(kind: str) -> None:
    policy, buffer = record(kind)
    batch = buffer.chunks()
    with torch.no_grad():
        out = evaluate_chunks(policy, batch, torch.arange(batch.num_chunks))
    valid = batch.valid.bool()
    assert batch.action_mask[valid].gather(1, batch.actions[valid][:, None]).all()
    ratio = (out.logp - batch.logp)[valid].exp()
    torch.testing.assert_close(ratio, torch.ones_like(ratio), rtol=0, atol=1e-5)
    losses = ppo_losses(
        logp=out.logp,
        old_logp=batch.logp,
        advantages=batch.advantages,
        values=out.values,
        old_values=batch.values,
        returns=batch.returns,
        entropy=out.entropy,
        valid=batch.valid,
        cfg=PPOConfig(),
    )
    assert abs(float(losses.approx_kl)) < 1e-7 and float(losses.clip_frac) == 0.0
    assert float(losses.entropy) > 0


def test_the_update_starts_at_unit_ratio_and_moves_the_pair_head() -> None:
    policy, buffer = record("lstm")
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
    head = policy.policy_head[-1]
    before = {name: p.detach().clone() for name, p in head.named_parameters()}
    stats = ppo_update(policy, optimizer, buffer.chunks(), PPOConfig(epochs=1, num_minibatches=1))
    assert abs(stats["approx_kl"]) < 1e-7 and stats["clip_frac"] == 0.0
    moved = [n for n, p in head.named_parameters() if not torch.equal(p, before[n])]
    assert {"first.weight", "second.weight", "u1.weight", "u2.weight"} <= set(moved)
