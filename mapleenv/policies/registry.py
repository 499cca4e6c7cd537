"""The policy registry: one builder per ``model.kind``.

A new kind is one entry in :data:`POLICIES`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from mapleenv.policies.actor_critic import ActorCritic
from mapleenv.policies.attention import AttentionActorCritic
from mapleenv.policies.config import ModelConfig, ModelKind
from mapleenv.policies.doubles_attention import DoublesAttentionActorCritic
from mapleenv.policies.pair_head import doubles_slots

PolicyBuilder = Callable[[int, int, ModelConfig], torch.nn.Module]


def attention_policy(obs_dim: int, n_actions: int, cfg: ModelConfig) -> torch.nn.Module:
    """``model.kind=attention``: the doubles policy with per-slot heads on a doubles joint
    action space, the singles one otherwise."""
    if doubles_slots(n_actions):
        return DoublesAttentionActorCritic(obs_dim, n_actions, cfg)
    return AttentionActorCritic(obs_dim, n_actions, cfg)


POLICIES: dict[str, PolicyBuilder] = {
    ModelKind.lstm: ActorCritic,
    ModelKind.mlp: ActorCritic,
    ModelKind.attention: attention_policy,
}


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
