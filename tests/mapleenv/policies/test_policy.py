"""Stateless policies: masked logits, per-env state isolation, resets, sequence replay."""

from __future__ import annotations

import pytest
import torch

from mapleenv.policies.recurrent import run_lstm
from trainer.config import ModelConfig
from trainer.policy import build_policy, log_prob_entropy, mask_logits, sample_actions

OBS, ACTIONS, ENVS = 6, 5, 4


def make_policy(kind: str = "lstm", shared: bool = True, layers: int = 1) -> torch.nn.Module:
    torch.manual_seed(0)
    cfg = ModelConfig(
        kind=kind, encoder_sizes=[16], hidden_size=8, num_layers=layers, shared_trunk=shared
    )
    return build_policy(OBS, ACTIONS, cfg)


def random_state(policy, batch: int) -> tuple[torch.Tensor, ...]:
    return tuple(torch.randn_like(x) for x in policy.initial_state(batch))


def test_masked_logits_give_illegal_actions_zero_probability() -> None:
    logits = torch.randn(64, ACTIONS) * 50
    mask = torch.rand(64, ACTIONS) > 0.5
    mask[:, 0] = True
    masked = mask_logits(logits, mask)
    assert torch.isfinite(masked).all()
    probs = torch.softmax(masked, -1)
    assert (probs[~mask] == 0).all()
    actions, logp = sample_actions(masked)
    assert mask.gather(1, actions[:, None]).all()
    lp, ent = log_prob_entropy(masked, mask, actions)
    assert torch.allclose(lp, logp)
    assert torch.isfinite(ent).all() and torch.isfinite(lp).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_masking_is_dtype_aware_and_never_nan(dtype: torch.dtype) -> None:
    logits = torch.randn(3, ACTIONS).to(dtype)
    mask = torch.tensor([[1, 0, 0, 0, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    masked = mask_logits(logits, mask)
    assert masked.dtype == dtype and torch.isfinite(masked).all()
    probs = torch.softmax(masked.float(), -1)
    assert not torch.isnan(probs).any()
    assert probs[0, 0] == 1.0  # the only legal action takes all the mass


def test_policy_gradients_through_masked_entropy_are_finite() -> None:
    policy = make_policy()
    obs = torch.randn(ENVS, OBS)
    mask = torch.zeros(ENVS, ACTIONS, dtype=torch.bool)
    mask[:, :2] = True
    logits, value, _ = policy(obs, mask, policy.initial_state(ENVS), torch.zeros(ENVS))
    assert (torch.softmax(logits, -1)[:, 2:] == 0).all()
    logp, entropy = log_prob_entropy(logits, mask, torch.zeros(ENVS, dtype=torch.long))
    (logp.sum() + entropy.sum() + value.sum()).backward()
    assert all(torch.isfinite(p.grad).all() for p in policy.parameters() if p.grad is not None)


@pytest.mark.parametrize("shared", [True, False])
def test_stepping_env0_never_changes_env1(shared: bool) -> None:
    policy = make_policy(shared=shared, layers=2)
    hidden = random_state(policy, ENVS)
    obs, mask = torch.randn(ENVS, OBS), torch.ones(ENVS, ACTIONS, dtype=torch.bool)
    starts = torch.zeros(ENVS)
    logits, value, new = policy(obs, mask, hidden, starts)
    obs2 = obs.clone()
    obs2[0] += 5.0  # a different observation for env 0 only
    starts2 = starts.clone()
    starts2[0] = 1.0  # and a reset of env 0
    logits2, value2, new2 = policy(obs2, mask, hidden, starts2)
    for a, b in zip(new, new2, strict=True):
        assert torch.equal(a[:, 1:], b[:, 1:])
        assert not torch.allclose(a[:, 0], b[:, 0])
    assert torch.equal(logits[1:], logits2[1:]) and torch.equal(value[1:], value2[1:])


def test_reset_state_equals_fresh_zero_state() -> None:
    policy = make_policy(layers=2)
    obs, mask = torch.randn(ENVS, OBS), torch.ones(ENVS, ACTIONS, dtype=torch.bool)
    starts = torch.ones(ENVS)
    out_reset = policy(obs, mask, random_state(policy, ENVS), starts)
    out_fresh = policy(obs, mask, policy.initial_state(ENVS), torch.zeros(ENVS))
    for a, b in zip(out_reset[:2], out_fresh[:2], strict=True):
        assert torch.equal(a, b)
    for a, b in zip(out_reset[2], out_fresh[2], strict=True):
        assert torch.equal(a, b)


def _stepwise(policy, obs, mask, hidden, starts):
    logits, values = [], []
    for t in range(obs.shape[0]):
        lg, v, hidden = policy(obs[t], mask[t], hidden, starts[t])
        logits.append(lg)
        values.append(v)
    return torch.stack(logits), torch.stack(values), hidden


@pytest.mark.parametrize("shared", [True, False])
def test_sequence_forward_matches_stepwise_with_episode_starts(shared: bool) -> None:
    policy = make_policy(shared=shared, layers=2)
    steps = 12
    torch.manual_seed(1)
    obs = torch.randn(steps, ENVS, OBS)
    mask = torch.rand(steps, ENVS, ACTIONS) > 0.3
    mask[..., 0] = True
    starts = (torch.rand(steps, ENVS) < 0.25).float()
    starts[0, 0] = 1.0
    starts[:, 3] = 0.0  # one column without any start
    hidden = random_state(policy, ENVS)
    seq = policy(obs, mask, hidden, starts)
    step = _stepwise(policy, obs, mask, hidden, starts)
    torch.testing.assert_close(seq[0], step[0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(seq[1], step[1], rtol=1e-5, atol=1e-5)
    for a, b in zip(seq[2], step[2], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_no_state_crosses_an_episode_start() -> None:
    torch.manual_seed(2)
    lstm = torch.nn.LSTM(3, 4, num_layers=2)
    steps, batch = 10, 3
    x = torch.randn(steps, batch, 3)
    starts = torch.zeros(steps, batch)
    starts[4, 0] = starts[7, 1] = 1.0
    hidden = (torch.randn(2, batch, 4), torch.randn(2, batch, 4))
    out, _ = run_lstm(lstm, x, hidden, starts)
    # Anything before an episode start (inputs and the initial state) cannot affect it.
    x2 = x.clone()
    x2[:4, 0] = torch.randn(4, 3)
    x2[:7, 1] = torch.randn(7, 3)
    hidden2 = tuple(h.clone() for h in hidden)
    for h in hidden2:
        h[:, :2] = torch.randn(2, 2, 4)
    out2, _ = run_lstm(lstm, x2, hidden2, starts)
    assert torch.equal(out[4:, 0], out2[4:, 0])
    assert torch.equal(out[7:, 1], out2[7:, 1])
    assert torch.equal(out[:, 2], out2[:, 2])
    assert not torch.allclose(out[:4, 0], out2[:4, 0])
    # A segment starting mid-sequence equals a fresh run from zeros.
    fresh, _ = lstm(x[4:, 0:1], None)
    torch.testing.assert_close(out[4:, 0:1], fresh, rtol=1e-6, atol=1e-6)


def test_mlp_has_the_same_signature_and_empty_state() -> None:
    policy = make_policy("mlp")
    assert policy.initial_state(ENVS) == ()
    obs, mask = torch.randn(7, ENVS, OBS), torch.ones(7, ENVS, ACTIONS, dtype=torch.bool)
    logits, value, new = policy(obs, mask, (), torch.zeros(7, ENVS))
    assert logits.shape == (7, ENVS, ACTIONS) and value.shape == (7, ENVS) and new == ()
    logits1, value1, _ = policy(obs[0], mask[0], (), torch.ones(ENVS))
    torch.testing.assert_close(logits1, logits[0])


def test_policy_modules_keep_no_recurrent_state() -> None:
    policy = make_policy()
    obs, mask = torch.randn(ENVS, OBS), torch.ones(ENVS, ACTIONS, dtype=torch.bool)
    hidden = random_state(policy, ENVS)
    first = policy(obs, mask, hidden, torch.zeros(ENVS))
    policy(torch.randn(ENVS, OBS), mask, policy.initial_state(ENVS), torch.ones(ENVS))
    again = policy(obs, mask, hidden, torch.zeros(ENVS))
    assert torch.equal(first[0], again[0]) and torch.equal(first[2][0], again[2][0])
    assert not any(isinstance(v, torch.Tensor) for v in vars(policy).values())
