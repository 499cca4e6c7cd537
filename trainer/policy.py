"""Compatibility module: ``trainer.policy.build_policy`` (DESIGN.md contract 7) and friends
now live in :mod:`trainer.policies`."""

from trainer.policies import (
    ActorCritic,
    build_policy,
    log_prob_entropy,
    mask_logits,
    policy_from_snapshot,
    policy_spec,
    sample_actions,
)

__all__ = [
    "ActorCritic",
    "build_policy",
    "log_prob_entropy",
    "mask_logits",
    "policy_from_snapshot",
    "policy_spec",
    "sample_actions",
]
