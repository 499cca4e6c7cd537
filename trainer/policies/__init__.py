"""Policies: build one from a ``ModelConfig`` (a registry keyed by ``model.kind``), its
checkpoint spec, and rebuilding one from a snapshot or checkpoint.

Every policy is stateless with the signature ``forward(obs, action_mask, hidden,
episode_start) -> (logits, value, new_hidden)`` and has ``initial_state(batch)``
(DESIGN.md contract 6). A new kind is one entry in :data:`POLICIES`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from trainer.config import ModelConfig, ModelKind
from trainer.policies.actor_critic import ActorCritic
from trainer.policies.attention import AttentionActorCritic
from trainer.policies.masking import log_prob_entropy, mask_logits, sample_actions

PolicyBuilder = Callable[[int, int, ModelConfig], torch.nn.Module]

POLICIES: dict[str, PolicyBuilder] = {
    ModelKind.lstm: ActorCritic,
    ModelKind.mlp: ActorCritic,
    ModelKind.attention: AttentionActorCritic,
}

__all__ = [
    "POLICIES",
    "ActorCritic",
    "AttentionActorCritic",
    "build_policy",
    "log_prob_entropy",
    "mask_logits",
    "policy_from_snapshot",
    "policy_spec",
    "sample_actions",
]


def build_policy(obs_dim: int, n_actions: int, model_cfg: ModelConfig | Any) -> torch.nn.Module:
    """Build a policy from a ``ModelConfig`` or a mapping with its fields."""
    if not isinstance(model_cfg, ModelConfig):
        if isinstance(model_cfg, DictConfig):
            model_cfg = OmegaConf.to_container(model_cfg, resolve=True)
        model_cfg = ModelConfig(**dict(model_cfg))
    builder = POLICIES.get(str(model_cfg.kind))
    if builder is None:
        raise ValueError(f"model.kind must be one of {'|'.join(POLICIES)}, got {model_cfg.kind!r}")
    return builder(obs_dim, n_actions, model_cfg)


def policy_spec(policy: torch.nn.Module) -> dict[str, Any]:
    """What a checkpoint needs to rebuild ``policy`` without Hydra (plain values only)."""
    return {
        "obs_dim": policy.obs_dim,
        "n_actions": policy.n_actions,
        "model": dataclasses.asdict(policy.cfg),
    }


def policy_from_snapshot(snapshot: Mapping[str, Any]) -> torch.nn.Module:
    """Rebuild a snapshot's (or a checkpoint's) policy on CPU, in eval mode."""
    spec = snapshot["policy"]
    policy = build_policy(spec["obs_dim"], spec["n_actions"], spec["model"])
    state = {
        k: torch.as_tensor(np.asarray(v)) if not torch.is_tensor(v) else v
        for k, v in snapshot["model"].items()
    }
    policy.load_state_dict(state)
    return policy.cpu().eval()
