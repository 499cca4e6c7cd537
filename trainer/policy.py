"""Public API, contract 7 of ../shared/DESIGN.md: ``trainer.policy.build_policy(obs_dim,
n_actions, model_cfg)`` and friends, what scripts outside the repo import. A thin re-export,
kept so that name stays put: the networks live in :mod:`mapleenv.policies`. Add no logic
here."""

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
