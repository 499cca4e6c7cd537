"""Maple's policy networks (torch): built from a :class:`ModelConfig` through the registry
keyed by ``model.kind``, and rebuilt from a snapshot or checkpoint.

They live on the env side because frozen policies play as opponents inside env workers
(:mod:`mapleenv.opponents.policy`); the trainer trains the same classes. Every policy is
stateless: ``forward(obs, action_mask, hidden, episode_start) -> (logits, value,
new_hidden)`` and ``initial_state(batch)``; the caller owns the recurrent state.
Checkpoint files (format 2: tensors and plain values, read with ``weights_only=True``) have
their one loader here too (:mod:`mapleenv.policies.checkpoint`).
"""

from mapleenv.policies.actor_critic import ActorCritic
from mapleenv.policies.attention import AttentionActorCritic
from mapleenv.policies.checkpoint import (
    CHECKPOINT_DIR,
    FORMAT_VERSION,
    LAST,
    CheckpointError,
    load_checkpoint,
    resolve_checkpoint,
    to_plain,
)
from mapleenv.policies.config import ActionHead, Activation, ModelConfig, ModelKind
from mapleenv.policies.inference import batch1_step
from mapleenv.policies.masking import log_prob_entropy, mask_logits, sample_actions
from mapleenv.policies.pair_head import PairHead, doubles_slots, resolve_action_head
from mapleenv.policies.recurrent import Hidden, run_lstm, zero_state
from mapleenv.policies.registry import POLICIES, PolicyBuilder, build_policy
from mapleenv.policies.snapshot import (
    checked_encoder,
    checked_snapshot,
    make_snapshot,
    policy_from_snapshot,
    policy_spec,
    read_snapshot,
    snapshot_encoder,
    snapshot_mask_futile,
    snapshot_plugins,
)
from mapleenv.policies.spec_check import check_network

__all__ = [
    "CHECKPOINT_DIR",
    "FORMAT_VERSION",
    "LAST",
    "POLICIES",
    "ActionHead",
    "Activation",
    "ActorCritic",
    "AttentionActorCritic",
    "CheckpointError",
    "Hidden",
    "ModelConfig",
    "ModelKind",
    "PairHead",
    "PolicyBuilder",
    "batch1_step",
    "build_policy",
    "check_network",
    "checked_encoder",
    "doubles_slots",
    "checked_snapshot",
    "load_checkpoint",
    "log_prob_entropy",
    "make_snapshot",
    "mask_logits",
    "policy_from_snapshot",
    "policy_spec",
    "read_snapshot",
    "resolve_action_head",
    "resolve_checkpoint",
    "run_lstm",
    "sample_actions",
    "snapshot_encoder",
    "snapshot_mask_futile",
    "snapshot_plugins",
    "to_plain",
    "zero_state",
]
