"""Maple's policy networks (torch): built from a :class:`ModelConfig` through the registry
keyed by ``model.kind``, and rebuilt from a snapshot or checkpoint.

They live on the env side because frozen policies play as opponents inside env workers
(:mod:`mapleenv.opponents.policy`); the trainer trains the same classes. Every policy is
stateless: ``forward(obs, action_mask, hidden, episode_start) -> (logits, value,
new_hidden)`` and ``initial_state(batch)``; the caller owns the recurrent state.
Checkpoint files (format 2: tensors and plain values, read with ``weights_only=True``) have
their one loader here too (:mod:`mapleenv.policies.checkpoint`).

The package imports its modules on first use (PEP 562): the config types
(:class:`ModelConfig`, :class:`ModelKind`, ...) come without torch, so a command can check
its settings, and refuse bad ones, before it pays torch's import (~3 s of CPU on a 2-core box).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mapleenv.policies.actor_critic import ActorCritic
    from mapleenv.policies.attention import AttentionActorCritic
    from mapleenv.policies.checkpoint import load_checkpoint, to_plain
    from mapleenv.policies.config import ActionHead, Activation, ModelConfig, ModelKind
    from mapleenv.policies.files import (
        CHECKPOINT_DIR,
        FORMAT_VERSION,
        LAST,
        CheckpointError,
        resolve_checkpoint,
    )
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

# public name -> the module of this package that defines it
_HOMES = {
    "ActorCritic": "actor_critic",
    "AttentionActorCritic": "attention",
    "CHECKPOINT_DIR": "files",
    "CheckpointError": "files",
    "FORMAT_VERSION": "files",
    "LAST": "files",
    "load_checkpoint": "checkpoint",
    "resolve_checkpoint": "files",
    "to_plain": "checkpoint",
    "ActionHead": "config",
    "Activation": "config",
    "ModelConfig": "config",
    "ModelKind": "config",
    "batch1_step": "inference",
    "log_prob_entropy": "masking",
    "mask_logits": "masking",
    "sample_actions": "masking",
    "PairHead": "pair_head",
    "doubles_slots": "pair_head",
    "resolve_action_head": "pair_head",
    "Hidden": "recurrent",
    "run_lstm": "recurrent",
    "zero_state": "recurrent",
    "POLICIES": "registry",
    "PolicyBuilder": "registry",
    "build_policy": "registry",
    "checked_encoder": "snapshot",
    "checked_snapshot": "snapshot",
    "make_snapshot": "snapshot",
    "policy_from_snapshot": "snapshot",
    "policy_spec": "snapshot",
    "read_snapshot": "snapshot",
    "snapshot_encoder": "snapshot",
    "snapshot_mask_futile": "snapshot",
    "snapshot_plugins": "snapshot",
    "check_network": "spec_check",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # once: later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))


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
