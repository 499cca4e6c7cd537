"""The policy part of Maple's Python API (docs/architecture.md, "Contracts", 7):
``trainer.policy.build_policy(obs_dim, n_actions, model_cfg)`` and friends, for scripts outside
the repository. A re-export that keeps those names put: the networks live in
:mod:`mapleenv.policies`."""

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
