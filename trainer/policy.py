"""``trainer.policy.build_policy`` (the Python API scripts outside the repo import) and
friends: the networks live in :mod:`mapleenv.policies`."""

from mapleenv.policies import (
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
