"""The doubles pair head: exact masked log-probs and sampling over the joint space, chosen by
itself on a doubles-sized action space, and a checkpoint spec that rebuilds it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

from mapleenv.actions.doubles import action_space_size, slot_space_size
from mapleenv.encoders import make_encoder
from mapleenv.encoders.features import layout
from mapleenv.policies import (
    CheckpointError,
    PairHead,
    batch1_step,
    check_network,
    log_prob_entropy,
    policy_from_snapshot,
    policy_spec,
    read_snapshot,
    sample_actions,
)
from mapleenv.policies.attention import N_ACTIONS
from trainer.checkpoint import save_checkpoint
from trainer.config import ModelConfig
from trainer.policy import build_policy

S = slot_space_size(9)  # 47
A = action_space_size(9)  # 2,209
OBS = 40


def doubles_masks(batch: int, generator: torch.Generator) -> torch.Tensor:
    """Random joint masks ``[batch, S * S]`` shaped like doubles': each slot's legal
    sub-actions, minus pairs legal apart but not together (both switching to one mon, and
    random others), at least one legal pair per row."""
    first = torch.rand(batch, S, generator=generator) < 0.4
    second = torch.rand(batch, S, generator=generator) < 0.4
    first[:, 0] = second[:, 0] = True  # pass, always legal here
    joint = first[:, :, None] & second[:, None, :]
    same_switch = torch.zeros(S, S, dtype=torch.bool)
    same_switch[range(1, 7), range(1, 7)] = True
    joint &= ~same_switch
    joint &= torch.rand(batch, S, S, generator=generator) < 0.8
    joint[:, 0, 0] = True
    return joint.reshape(batch, A)


def brute_force_log_probs(head: PairHead, x: torch.Tensor, mask: torch.Tensor) -> np.ndarray:
    """Log-probs ``[B, S * S]`` written out pair by pair in float64: the joint logit of each
    pair, then a softmax over the legal pairs only (illegal: -inf)."""
    f1 = head.first(x).double().numpy()
    f2 = head.second(x).double().numpy()
    u1 = head.u1(x).double().view(-1, S, head.rank).numpy()
    u2 = head.u2(x).double().view(-1, S, head.rank).numpy()
    out = np.full((x.shape[0], A), -np.inf)
    for row in range(x.shape[0]):
        legal = np.flatnonzero(mask[row].numpy())
        logits = np.array(
            [f1[row, a // S] + f2[row, a % S] + u1[row, a // S] @ u2[row, a % S] for a in legal]
        )
        out[row, legal] = logits - np.logaddexp.reduce(logits)
    return out


def policy(kind: str, **model) -> torch.nn.Module:
    torch.manual_seed(0)
    cfg = ModelConfig(kind=kind, encoder_sizes=[32], hidden_size=16, **model)
    return build_policy(OBS, A, cfg)


def step_inputs(net: torch.nn.Module, batch: int, seed: int = 0) -> tuple:
    generator = torch.Generator().manual_seed(seed)
    obs = torch.randn(batch, OBS, generator=generator)
    return obs, doubles_masks(batch, generator), net.initial_state(batch), torch.ones(batch)


@pytest.mark.parametrize("kind", ["lstm", "mlp"])
def test_doubles_gets_the_pair_head_and_singles_the_flat_one(kind: str) -> None:
    net = policy(kind)
    assert net.action_head == "pair" and isinstance(net.policy_head[-1], PairHead)
    singles = build_policy(OBS, 26, ModelConfig(kind=kind, encoder_sizes=[32], hidden_size=16))
    assert singles.action_head == "flat"
    assert isinstance(singles.policy_head[-1], torch.nn.Linear)
    flat = policy(kind, action_head="flat")
    assert flat.policy_head[-1].out_features == A


@pytest.mark.parametrize("kind", ["lstm", "mlp"])
def test_log_probs_equal_a_brute_force_masked_softmax_over_the_joint_logits(kind: str) -> None:
    net = policy(kind, head_sizes=[24])
    head = net.policy_head[-1]
    with torch.no_grad():  # a pair term that is not zero, and peaked logits, as after training
        head.u2.weight.normal_(0.0, 0.3)
        head.first.weight.normal_(0.0, 0.3)
    obs, mask, hidden, start = step_inputs(net, 6)
    with torch.no_grad():
        logits, _, _ = net(obs, mask, hidden, start)
        features, _ = net.trunk(obs[None], hidden, start[None])
        expected = brute_force_log_probs(head, net.policy_head[0](features[0]), mask)
        got = torch.log_softmax(logits, -1).double().numpy()  # what sampling and PPO read
        actions, sampled_logp = sample_actions(logits, torch.Generator().manual_seed(1))
        logp, entropy = log_prob_entropy(logits, mask, actions)
    legal = mask.numpy()
    assert np.all(got[~legal] < -1e30)  # masked pairs: no probability at all
    np.testing.assert_allclose(got[legal], expected[legal], rtol=0, atol=1e-5)
    probs = np.exp(expected)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-9)
    rows = np.arange(6)
    np.testing.assert_allclose(sampled_logp.double(), expected[rows, actions], atol=1e-5)
    np.testing.assert_allclose(logp.double(), expected[rows, actions], atol=1e-5)
    brute_entropy = -np.where(legal, probs * np.where(legal, expected, 0.0), 0.0).sum(-1)
    np.testing.assert_allclose(entropy.double(), brute_entropy, atol=1e-4)


def test_sampling_never_picks_a_masked_pair() -> None:
    """The head favours (switch to mon 1, switch to mon 1) by far: legal for each slot apart,
    never together; no draw picks it or any other masked pair."""
    net = policy("mlp")
    with torch.no_grad():
        net.policy_head[-1].first.bias[1] = 8.0
        net.policy_head[-1].second.bias[1] = 8.0
    obs, mask, hidden, start = step_inputs(net, 64, seed=3)
    both = mask.view(64, S, S)
    both[:, 1, :] = both[:, :, 1] = True  # each slot may switch to mon 1...
    both[:, 1, 1] = False  # ...but not both
    with torch.no_grad():
        logits, _, _ = net(obs, mask, hidden, start)
    generator = torch.Generator().manual_seed(0)
    near = 0
    for _ in range(50):  # 3,200 draws
        actions, logp = sample_actions(logits, generator)
        assert mask.gather(1, actions[:, None]).all() and torch.isfinite(logp).all()
        near += int(((actions // S == 1) | (actions % S == 1)).sum())
    assert near > 0.9 * 50 * 64  # the mass went to the legal neighbours of the masked pair


def test_pair_rank_zero_is_the_sum_of_slot_logits() -> None:
    head = PairHead(8, S, rank=0)
    x = torch.randn(3, 8)
    joint = head(x).view(3, S, S)
    expected = head.first(x)[:, :, None] + head.second(x)[:, None, :]
    torch.testing.assert_close(joint, expected)
    assert head.u1 is None and sum(p.numel() for p in head.parameters()) == 2 * (8 * S + S)


def test_the_pair_term_starts_at_zero_and_learns() -> None:
    head = PairHead(8, S, rank=4)
    x = torch.randn(5, 8)
    joint = head(x).view(5, S, S)
    torch.testing.assert_close(joint, head.first(x)[:, :, None] + head.second(x)[:, None, :])
    joint[:, 3, 5].sum().backward()
    assert head.u2.weight.grad.abs().sum() > 0


def test_checkpoint_spec_round_trip_rebuilds_the_pair_head(tmp_path: Path) -> None:
    encoder = make_encoder("doubles")
    net = build_policy(
        encoder.size, A, ModelConfig(kind="lstm", encoder_sizes=[32], hidden_size=16, pair_rank=4)
    )
    spec = policy_spec(net)
    assert spec["model"]["action_head"] == "pair" and spec["model"]["pair_rank"] == 4
    path = save_checkpoint(
        tmp_path / "doubles.pt",
        {
            "model": net.state_dict(),
            "policy": spec,
            "global_step": 0,
            "iteration": 0,
            "config": {"env": {"encoder": "doubles", "battle_format": "gen9randomdoublesbattle"}},
        },
    )
    snapshot = read_snapshot(path)
    rebuilt = policy_from_snapshot(snapshot)
    assert isinstance(rebuilt.policy_head[-1], PairHead) and rebuilt.policy_head[-1].rank == 4
    assert policy_spec(rebuilt) == snapshot["policy"]
    generator = torch.Generator().manual_seed(0)
    obs = torch.randn(3, encoder.size, generator=generator)
    inputs = (obs, doubles_masks(3, generator), net.initial_state(3), torch.ones(3))
    with torch.no_grad():
        torch.testing.assert_close(rebuilt(*inputs)[0], net.eval()(*inputs)[0])


def test_a_flat_doubles_policy_says_so_and_singles_specs_are_unchanged() -> None:
    flat = policy("mlp", action_head="flat")
    assert policy_spec(flat)["model"]["action_head"] == "flat"
    assert "pair_rank" not in policy_spec(flat)["model"]
    spec = policy_spec(flat)
    assert build_policy(OBS, A, spec["model"]).action_head == "flat"
    singles = build_policy(OBS, 26, ModelConfig(kind="lstm", encoder_sizes=[32], hidden_size=16))
    model = policy_spec(singles)["model"]
    before = {k for k in dataclasses.asdict(ModelConfig()) if k not in ("aux_classes",)}
    assert set(model) == before - {"action_head", "pair_rank"}


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"action_head": "triple"}, "policy.model.action_head must be one of auto|flat|pair"),
        ({"pair_rank": -1}, "policy.model.pair_rank must be a positive integer"),
        ({"pair_rank": "8"}, "policy.model.pair_rank must be a positive integer"),
        ({"action_head": "flat"}, "lacks"),  # the weights are a pair head's
    ],
)
def test_a_bad_pair_spec_is_one_line(change: dict, needle: str) -> None:
    net = policy("mlp")
    spec = policy_spec(net)
    spec["model"].update(change)
    with pytest.raises(CheckpointError) as info:
        check_network({"policy": spec, "model": net.state_dict()}, "x.pt")
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_pair_needs_a_square_space_and_attention_refuses_it() -> None:
    with pytest.raises(ValueError, match="S\\*S actions, got 26"):
        build_policy(OBS, 26, ModelConfig(kind="mlp", action_head="pair"))
    with pytest.raises(ValueError, match="model.action_head must be one of"):
        build_policy(OBS, A, ModelConfig(kind="mlp", action_head="multi"))
    small = {"token_size": 16, "attention_heads": 2, "hidden_size": 8}
    with pytest.raises(ValueError, match="action_head=pair needs model.kind lstm or mlp"):
        build_policy(
            layout.SINGLES_ENTITIES.size,
            N_ACTIONS,
            ModelConfig(kind="attention", action_head="pair", **small),
        )
    attention = build_policy(
        layout.SINGLES_ENTITIES.size, N_ACTIONS, ModelConfig(kind="attention", **small)
    )
    assert "action_head" not in policy_spec(attention)["model"]


@pytest.mark.parametrize("kind", ["lstm", "mlp"])
def test_a_frozen_doubles_opponent_runs_the_traced_step(kind: str) -> None:
    """A policy opponent's batch-1 step (:func:`batch1_step`) traces the pair head and gives
    the eager logits."""
    net = policy(kind)
    step = batch1_step(net, OBS, A)
    assert isinstance(step, torch.jit.ScriptModule)
    inputs = step_inputs(net, 1, seed=5)
    with torch.no_grad():
        torch.testing.assert_close(step(*inputs)[0], net(*inputs)[0], rtol=1e-5, atol=1e-5)
