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

from mapleenv.lazy import lazy_getattr

# public name -> the module that defines it
_LAZY = {
    "ActorCritic": "mapleenv.policies.actor_critic",
    "AttentionActorCritic": "mapleenv.policies.attention",
    "CHECKPOINT_DIR": "mapleenv.policies.files",
    "CheckpointError": "mapleenv.policies.files",
    "FORMAT_VERSION": "mapleenv.policies.files",
    "LAST": "mapleenv.policies.files",
    "load_checkpoint": "mapleenv.policies.checkpoint",
    "resolve_checkpoint": "mapleenv.policies.files",
    "to_plain": "mapleenv.policies.checkpoint",
    "ActionHead": "mapleenv.policies.config",
    "Activation": "mapleenv.policies.config",
    "ModelConfig": "mapleenv.policies.config",
    "ModelKind": "mapleenv.policies.config",
    "batch1_step": "mapleenv.policies.inference",
    "log_prob_entropy": "mapleenv.policies.masking",
    "mask_logits": "mapleenv.policies.masking",
    "sample_actions": "mapleenv.policies.masking",
    "PairHead": "mapleenv.policies.pair_head",
    "doubles_slots": "mapleenv.policies.pair_head",
    "resolve_action_head": "mapleenv.policies.pair_head",
    "Hidden": "mapleenv.policies.recurrent",
    "run_lstm": "mapleenv.policies.recurrent",
    "zero_state": "mapleenv.policies.recurrent",
    "POLICIES": "mapleenv.policies.registry",
    "PolicyBuilder": "mapleenv.policies.registry",
    "build_policy": "mapleenv.policies.registry",
    "checked_encoder": "mapleenv.policies.snapshot",
    "checked_snapshot": "mapleenv.policies.snapshot",
    "make_snapshot": "mapleenv.policies.snapshot",
    "policy_from_snapshot": "mapleenv.policies.snapshot",
    "policy_spec": "mapleenv.policies.snapshot",
    "read_snapshot": "mapleenv.policies.snapshot",
    "snapshot_encoder": "mapleenv.policies.snapshot",
    "snapshot_mask_futile": "mapleenv.policies.snapshot",
    "snapshot_plugins": "mapleenv.policies.snapshot",
    "check_network": "mapleenv.policies.spec_check",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = sorted(_LAZY)
