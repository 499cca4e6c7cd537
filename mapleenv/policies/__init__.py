"""Maple's policy networks (torch): built from a :class:`ModelConfig` through the registry
keyed by ``model.kind``, and rebuilt from a snapshot or checkpoint.

They live on the env side because frozen policies play as opponents inside env workers
(:mod:`mapleenv.opponents.policy`); the trainer trains the same classes. Every policy is
stateless: ``forward(obs, action_mask, hidden, episode_start) -> (logits, value,
new_hidden)`` and ``initial_state(batch)``; the caller owns the recurrent state.
"""

from mapleenv.policies.actor_critic import ActorCritic
from mapleenv.policies.attention import AttentionActorCritic
from mapleenv.policies.config import Activation, ModelConfig, ModelKind
from mapleenv.policies.masking import log_prob_entropy, mask_logits, sample_actions
from mapleenv.policies.recurrent import Hidden, run_lstm, zero_state
from mapleenv.policies.registry import POLICIES, PolicyBuilder, build_policy
from mapleenv.policies.snapshot import (
    make_snapshot,
    policy_from_snapshot,
    policy_spec,
    read_snapshot,
    snapshot_encoder,
    snapshot_plugins,
)

__all__ = [
    "POLICIES",
    "Activation",
    "ActorCritic",
    "AttentionActorCritic",
    "Hidden",
    "ModelConfig",
    "ModelKind",
    "PolicyBuilder",
    "build_policy",
    "log_prob_entropy",
    "make_snapshot",
    "mask_logits",
    "policy_from_snapshot",
    "policy_spec",
    "read_snapshot",
    "run_lstm",
    "sample_actions",
    "snapshot_encoder",
    "snapshot_plugins",
    "zero_state",
]
