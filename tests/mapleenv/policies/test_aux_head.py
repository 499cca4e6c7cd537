"""The optional auxiliary (opponent-action) head: absent by default, and beside it the
policy's outputs are exactly those of the same network without it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from mapleenv.encoders.features import layout
from mapleenv.policies.attention import N_ACTIONS
from trainer.config import ModelConfig
from trainer.policy import build_policy

ROOT = Path(__file__).resolve().parents[3]
STEPS, ENVS, CLASSES = 5, 3, 4
SMALL_ATTENTION = {"token_size": 16, "attention_heads": 2, "hidden_size": 8}
KINDS = {
    "lstm": ({"kind": "lstm", "encoder_sizes": [16], "hidden_size": 8}, 20, 7),
    "lstm_two_trunks": (
        {"kind": "lstm", "encoder_sizes": [16], "hidden_size": 8, "shared_trunk": False},
        20,
        7,
    ),
    "mlp": ({"kind": "mlp", "encoder_sizes": [16], "head_sizes": [8]}, 20, 7),
    "attention": (
        {"kind": "attention", **SMALL_ATTENTION},
        layout.SINGLES_ENTITIES.size,
        N_ACTIONS,
    ),
}


def build(kind: str, aux_classes: int) -> torch.nn.Module:
    fields, obs_dim, n_actions = KINDS[kind]
    torch.manual_seed(0)
    return build_policy(obs_dim, n_actions, ModelConfig(**fields, aux_classes=aux_classes))


def inputs(policy: torch.nn.Module) -> tuple:
    torch.manual_seed(1)
    obs = torch.rand(STEPS, ENVS, policy.obs_dim)
    mask = torch.rand(STEPS, ENVS, policy.n_actions) < 0.7
    mask[..., 0] = True
    start = torch.zeros(STEPS, ENVS)
    start[0] = 1.0
    start[3, 1] = 1.0
    return obs, mask, policy.initial_state(ENVS), start


@pytest.mark.parametrize("kind", KINDS)
def test_no_head_by_default(kind: str) -> None:
    policy = build(kind, 0)
    assert not any("aux" in name for name in policy.state_dict())
    with pytest.raises(NotImplementedError, match="no auxiliary head"):
        policy.forward_sequence_aux(*inputs(policy))


@pytest.mark.parametrize("kind", KINDS)
def test_head_leaves_the_policy_unchanged(kind: str) -> None:
    """Same seed with and without the head: the same parameters elsewhere, the same
    logits, values and state; ``forward_sequence_aux`` agrees with ``forward``."""
    plain, with_aux = build(kind, 0), build(kind, CLASSES)
    shared = plain.state_dict()
    assert {k: v for k, v in with_aux.state_dict().items() if k in shared}.keys() == shared.keys()
    for name, value in shared.items():
        assert torch.equal(with_aux.state_dict()[name], value), name
    args = inputs(plain)
    logits, value, hidden = plain(*args)
    aux_out = with_aux.forward_sequence_aux(*args)
    assert torch.equal(aux_out[0], logits) and torch.equal(aux_out[1], value)
    for a, b in zip(aux_out[2], hidden, strict=True):
        assert torch.equal(a, b)
    assert aux_out[3].shape == (STEPS, ENVS, CLASSES)
    again = with_aux(*args)
    assert torch.equal(again[0], logits)


def test_config_dataclass_keeps_old_checkpoints() -> None:
    """A stored model config without ``aux_classes`` (every older checkpoint) builds with
    no head."""
    stored = {k: v for k, v in dataclasses.asdict(ModelConfig()).items() if k != "aux_classes"}
    assert build_policy(4, 3, stored).cfg.aux_classes == 0


def test_checkpoint_spec_names_the_head_only_when_there_is_one() -> None:
    """Without the head a policy's spec is what it was before ``aux_classes`` existed: the
    shipped model's stored spec equals its rebuilt policy's (so resume's spec comparison
    holds for every older run); with the head the spec keeps its classes."""
    from mapleenv.policies import policy_from_snapshot, policy_spec
    from trainer.checkpoint import load_checkpoint

    shipped = load_checkpoint(ROOT / "models" / "attention_ppo_gen9random.pt")
    assert "aux_classes" not in shipped["policy"]["model"]
    assert policy_spec(policy_from_snapshot(shipped)) == shipped["policy"]
    with_head = build("lstm", CLASSES)
    assert policy_spec(with_head)["model"]["aux_classes"] == CLASSES
    spec = policy_spec(with_head)
    rebuilt = build_policy(spec["obs_dim"], spec["n_actions"], spec["model"])
    assert rebuilt.aux_head is not None and rebuilt.cfg.aux_classes == CLASSES
