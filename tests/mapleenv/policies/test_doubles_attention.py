"""The doubles attention policy (``model=attention`` on a doubles env): built from the
``doubles3`` layout and a joint action space, per-slot logits joined exactly as the pair head
joins them, the same outputs in step and sequence form, a checkpoint spec that rebuilds it,
and a traced step for frozen opponents."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mapleenv.actions.doubles import action_space_size, slot_space_size
from mapleenv.encoders.doubles.entities import LAYOUT
from mapleenv.policies import (
    CheckpointError,
    batch1_step,
    check_network,
    policy_from_snapshot,
    policy_spec,
)
from mapleenv.policies.doubles_attention import DoublesAttentionActorCritic
from trainer.config import ModelConfig
from trainer.policy import build_policy

S, A = slot_space_size(9), action_space_size(9)
SMALL = {"token_size": 16, "attention_heads": 2, "hidden_size": 12}


def net(**model) -> DoublesAttentionActorCritic:
    torch.manual_seed(0)
    policy = build_policy(LAYOUT.size, A, ModelConfig(kind="attention", **{**SMALL, **model}))
    assert isinstance(policy, DoublesAttentionActorCritic)
    return policy


def inputs(batch: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Observations inside the layout's bounds (flags drawn 0/1, so some Pokémon and move
    slots are empty) and joint masks with each slot's legal sub-actions."""
    generator = torch.Generator().manual_seed(seed)
    low, high = (torch.as_tensor(b) for b in LAYOUT.bounds())
    obs = low + (high - low) * torch.rand(batch, LAYOUT.size, generator=generator)
    obs = torch.where(high - low == 1, obs.round(), obs)
    first = torch.rand(batch, S, generator=generator) < 0.5
    second = torch.rand(batch, S, generator=generator) < 0.5
    first[:, 0] = second[:, 0] = True
    return obs, (first[:, :, None] & second[:, None, :]).reshape(batch, A)


def test_it_reads_the_doubles3_layout_only() -> None:
    with pytest.raises(ValueError, match="use env.encoder=doubles_entities"):
        build_policy(LAYOUT.size - 1, A, ModelConfig(kind="attention", **SMALL))
    with pytest.raises(ValueError, match="action_head auto or pair"):
        net(action_head="flat")
    spec = policy_spec(net())
    assert spec["model"]["action_head"] == "pair" and spec["n_actions"] == A


def test_pair_rank_zero_is_a_sum_of_per_slot_logits_and_the_pair_term_adds_to_it() -> None:
    obs, _ = inputs(3)
    everything = torch.ones(3, A, dtype=torch.bool)
    for rank, separable in ((0, True), (4, False)):
        policy = net(pair_rank=rank)
        if rank:
            with torch.no_grad():
                policy.u2.weight.normal_(0.0, 0.3)
        with torch.no_grad():
            logits, _, _ = policy(obs, everything, policy.initial_state(3), torch.ones(3))
        joint = logits.view(3, S, S).double()
        # l1[a] + l2[b] exactly when every 2x2 interaction contrast is zero
        contrast = joint - joint[:, :1, :] - joint[:, :, :1] + joint[:, :1, :1]
        assert (contrast.abs().max() < 1e-4) == separable


def test_masked_pairs_get_no_probability_and_step_equals_sequence() -> None:
    policy = net().eval()
    steps, batch = 6, 2
    obs, mask = inputs(steps * batch, seed=1)
    obs, mask = obs.view(steps, batch, -1), mask.view(steps, batch, -1)
    starts = torch.zeros(steps, batch)
    starts[0], starts[3, 1] = 1.0, 1.0  # an episode starts inside the sequence
    with torch.no_grad():
        sequence, values, _ = policy(obs, mask, policy.initial_state(batch), starts)
        hidden, stepped = policy.initial_state(batch), []
        for t in range(steps):
            logits, _, hidden = policy(obs[t], mask[t], hidden, starts[t])
            stepped.append(logits)
    assert values.shape == (steps, batch)
    assert torch.all(torch.log_softmax(sequence, -1)[~mask] < -1e30)
    torch.testing.assert_close(torch.stack(stepped)[mask], sequence[mask], rtol=0, atol=1e-5)


def test_its_checkpoint_spec_rebuilds_it_and_a_frozen_opponent_traces_its_step() -> None:
    policy = net(pair_rank=4).eval()
    snapshot = {"policy": policy_spec(policy), "model": policy.state_dict()}
    check_network(snapshot, "doubles_attention.pt")
    rebuilt = policy_from_snapshot(snapshot)
    obs, mask = inputs(1, seed=2)
    args = (obs, mask, policy.initial_state(1), torch.ones(1))
    step = batch1_step(rebuilt, LAYOUT.size, A)
    assert isinstance(step, torch.jit.ScriptModule)
    with torch.no_grad():
        expected = policy(*args)[0]
        torch.testing.assert_close(rebuilt(*args)[0], expected)
        torch.testing.assert_close(step(*args)[0], expected, rtol=1e-5, atol=1e-5)
    wrong = {**snapshot, "model": {**snapshot["model"]}}
    wrong["model"].pop("u2.weight")
    with pytest.raises(CheckpointError, match="lacks"):
        check_network(wrong, "doubles_attention.pt")
    assert np.isfinite(expected[mask].numpy()).all()
