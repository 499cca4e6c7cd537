"""Sequence PPO: replaying chunks reproduces the rollout's log-probs (ratio == 1)."""

from __future__ import annotations

import pytest
import torch
from memory_env import memory_vector_env

from trainer.algos.buffer import RolloutBuffer
from trainer.algos.ppo import evaluate_chunks, ppo_update
from trainer.algos.terms import kickstart_term
from trainer.config import ModelConfig, PPOConfig
from trainer.envs.spaces import ObsAdapter
from trainer.policy import build_policy
from trainer.run.rollout import RolloutCollector

CPU = torch.device("cpu")


def collect(steps: int, bptt: int, mode: str = "SameStep", kind: str = "lstm", delay: int = 2):
    torch.manual_seed(0)
    envs = memory_vector_env(4, mode, delay=delay)
    adapter = ObsAdapter(envs.single_observation_space, envs.single_action_space)
    policy = build_policy(
        adapter.obs_dim,
        adapter.n_actions,
        ModelConfig(kind=kind, encoder_sizes=[16], hidden_size=8, num_layers=2),
    )
    hidden = (2, policy.state_size) if policy.recurrent else None
    buffer = RolloutBuffer(steps, 4, adapter.obs_dim, adapter.n_actions, bptt, hidden, CPU)
    collector = RolloutCollector(envs, policy, adapter, CPU, seed=0)
    collector.collect(buffer)  # a first rollout, so the second starts from a non-zero state
    collector.collect(buffer)
    envs.close()
    buffer.compute_returns(0.99, 0.95)
    return policy, buffer


CASES = [
    # (rollout steps, bptt, autoreset mode, episode delay)
    (24, 0, "SameStep", 2),  # whole rollout as one chunk, many episode starts inside
    (24, 4, "SameStep", 7),  # small chunks, state carried across chunk boundaries
    (24, 8, "SameStep", 2),  # episode starts inside chunks
    (26, 8, "SameStep", 2),  # last chunk padded
]


@pytest.mark.parametrize(("steps", "bptt", "mode", "delay"), CASES)
@pytest.mark.parametrize("kind", ["lstm", "mlp"])
def test_first_epoch_logprobs_equal_rollout_logprobs(steps, bptt, mode, delay, kind) -> None:
    policy, buffer = collect(steps, bptt, mode, kind, delay)
    batch = buffer.chunks()
    starts = batch.episode_start
    if kind == "lstm" and bptt == 8 and mode == "SameStep":
        assert starts[1:].any(), "the case must have episode starts inside chunks"
    with torch.no_grad():
        out = evaluate_chunks(policy, batch, torch.arange(batch.num_chunks))
    valid = batch.valid.bool()
    ratio = (out.logp - batch.logp)[valid].exp()
    torch.testing.assert_close(ratio, torch.ones_like(ratio), rtol=0, atol=1e-5)
    torch.testing.assert_close(out.values[valid], batch.values[valid], rtol=0, atol=1e-5)


def test_chunk_replay_in_shuffled_minibatches_matches_too() -> None:
    policy, buffer = collect(24, 8)
    batch = buffer.chunks()
    with torch.no_grad():
        for idx in torch.tensor_split(torch.randperm(batch.num_chunks), 3):
            out = evaluate_chunks(policy, batch, idx)
            valid = batch.valid[:, idx].bool()
            diff = (out.logp - batch.logp[:, idx])[valid]
            assert diff.abs().max() < 1e-5


def test_update_first_minibatch_has_unit_ratio_and_then_learns() -> None:
    policy, buffer = collect(24, 8)
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
    cfg = PPOConfig(epochs=1, num_minibatches=1)
    stats = ppo_update(policy, optimizer, buffer.chunks(), cfg)
    assert abs(stats["approx_kl"]) < 1e-7 and stats["clip_frac"] == 0.0
    before = [p.detach().clone() for p in policy.parameters()]
    stats = ppo_update(policy, optimizer, buffer.chunks(), PPOConfig(epochs=3, num_minibatches=2))
    assert stats["approx_kl"] > 0 and stats["epochs"] == 3
    assert any(not torch.equal(a, b) for a, b in zip(before, policy.parameters(), strict=True))


def test_target_kl_stops_early() -> None:
    policy, buffer = collect(24, 4)
    optimizer = torch.optim.Adam(policy.parameters(), lr=0.05)
    cfg = PPOConfig(epochs=10, num_minibatches=4, target_kl=1e-6)
    stats = ppo_update(policy, optimizer, buffer.chunks(), cfg)
    assert stats["epochs"] < 10


def test_bf16_autocast_update_runs_and_stays_near_unit_ratio() -> None:
    # The trainer enables it on CUDA only; CPU autocast exercises the same code path here.
    policy, buffer = collect(24, 8)
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
    cfg = PPOConfig(epochs=1, num_minibatches=1)
    stats = ppo_update(policy, optimizer, buffer.chunks(), cfg, autocast_bf16=True)
    assert all(torch.isfinite(torch.tensor(v)) for v in stats.values())
    assert abs(stats["approx_kl"]) < 1e-3
    assert all(p.dtype == torch.float32 for p in policy.parameters())


def test_kickstarting_pulls_the_policy_toward_the_teacher() -> None:
    policy, buffer = collect(24, 8)
    buffer.advantages.zero_()  # no policy-gradient signal: only the teacher moves it
    buffer.teacher_actions.fill_(1)
    buffer.teacher_actions[:, 0] = -1  # env 0 has no teacher action: it must be ignored
    batch = buffer.chunks()
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
    cfg = PPOConfig(epochs=1, num_minibatches=1, ent_coef=0.0, vf_coef=0.0)
    first = ppo_update(policy, optimizer, batch, cfg, terms=[kickstart_term(1.0)])
    for _ in range(40):
        last = ppo_update(policy, optimizer, batch, cfg, terms=[kickstart_term(1.0)])
    assert last["kickstart_loss"] < first["kickstart_loss"] / 2
    assert last["teacher_agreement"] == 1.0

    # coefficient 0: the statistics are reported, the teacher does not train the policy
    before = [p.detach().clone() for p in policy.parameters()]
    optimizer = torch.optim.Adam(policy.parameters(), lr=3e-3)
    stats = ppo_update(policy, optimizer, batch, cfg, terms=[kickstart_term(0.0)])
    assert "teacher_agreement" in stats
    assert all(torch.equal(a, b) for a, b in zip(before, policy.parameters(), strict=True))


def test_cloning_trains_on_the_teacher_and_ignores_the_advantages() -> None:
    """pg_coef=0 (algo.bc_steps): the same update whatever the advantages; pg_coef=1 differs."""
    policy, buffer = collect(24, 8)
    buffer.teacher_actions.fill_(1)
    start = {k: v.clone() for k, v in policy.state_dict().items()}
    cfg = PPOConfig(epochs=2, num_minibatches=2)

    def update(advantages: torch.Tensor, pg_coef: float) -> list[torch.Tensor]:
        policy.load_state_dict(start)
        buffer.advantages.copy_(advantages)
        optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
        stats = ppo_update(
            policy,
            optimizer,
            buffer.chunks(),
            cfg,
            terms=[kickstart_term(1.0)],
            pg_coef=pg_coef,
            generator=torch.Generator().manual_seed(0),
        )
        assert stats["kickstart_loss"] > 0
        return [p.detach().clone() for p in policy.parameters()]

    adv = torch.randn_like(buffer.advantages)
    cloned = update(adv, 0.0)
    assert all(torch.equal(a, b) for a, b in zip(cloned, update(-adv, 0.0), strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(cloned, start.values(), strict=True))
    ppo = update(adv, 1.0)
    assert not all(torch.equal(a, b) for a, b in zip(ppo, update(-adv, 1.0), strict=True))


def test_no_teacher_no_kickstart_statistics() -> None:
    policy, buffer = collect(24, 8)
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
    stats = ppo_update(
        policy, optimizer, buffer.chunks(), PPOConfig(epochs=1), terms=[kickstart_term(1.0)]
    )
    assert "kickstart_loss" not in stats and "teacher_agreement" not in stats
