"""A policy opponent's traced batch-1 step plays exactly as the eager network."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from mapleenv.encoders.features import layout
from mapleenv.policies import ModelConfig, batch1_step, build_policy, zero_state
from mapleenv.policies.attention import N_ACTIONS

STEPS = 12


def network(kind: str, obs_dim: int) -> nn.Module:
    torch.manual_seed(0)
    cfg = ModelConfig(
        kind=kind, encoder_sizes=[32], hidden_size=16, token_size=16, attention_heads=2
    )
    return build_policy(obs_dim, N_ACTIONS, cfg).eval()


@pytest.mark.parametrize(
    ("kind", "obs_dim"),
    [
        ("attention", layout.SINGLES_ENTITIES.size),
        ("attention", layout.SINGLES_SETS.size),
        ("lstm", 40),
    ],
)
def test_traced_step_follows_the_eager_network_over_a_battle(kind: str, obs_dim: int) -> None:
    net = network(kind, obs_dim)
    step = batch1_step(net, obs_dim, N_ACTIONS)
    assert isinstance(step, torch.jit.ScriptModule)  # the fast path is taken
    generator = torch.Generator().manual_seed(1)
    eager_state, traced_state = net.initial_state(1), net.initial_state(1)
    with torch.inference_mode():
        for t in range(STEPS):
            obs = torch.rand(1, obs_dim, generator=generator)
            mask = torch.rand(1, N_ACTIONS, generator=generator) < 0.6
            mask[0, t % N_ACTIONS] = True
            start = torch.tensor([1.0 if t in (0, 7) else 0.0])  # a second battle at t=7
            logits, value, eager_state = net(obs, mask, eager_state, start)
            fast_logits, fast_value, traced_state = step(obs, mask, traced_state, start)
            torch.testing.assert_close(fast_logits, logits, atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(fast_value, value, atol=1e-5, rtol=1e-5)
            assert int(fast_logits.argmax()) == int(logits.argmax())
            assert bool((fast_logits[~mask] == logits[~mask]).all())  # masked stay masked
    for fast, eager in zip(traced_state, eager_state, strict=True):
        torch.testing.assert_close(fast, eager, atol=1e-5, rtol=1e-5)


class BranchingPolicy(nn.Module):
    """A step with data-dependent control flow (on ``episode_start``, which the probes
    vary): a trace would bake in one branch."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 3)

    def initial_state(self, batch: int) -> tuple[torch.Tensor, ...]:
        return zero_state(1, batch, 2)

    def forward(self, obs, mask, hidden, start):
        logits = self.linear(obs) if bool(start.sum() > 0) else -self.linear(obs)
        return logits.masked_fill(~mask, -1e9), logits.sum(-1), hidden


def test_a_step_that_a_trace_cannot_follow_runs_eager() -> None:
    net = BranchingPolicy()
    assert batch1_step(net, 4, 3) is net
