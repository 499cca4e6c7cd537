"""``init_from=<checkpoint>``: a run that starts from another run's network (fine-tuning, e.g.
expert iteration from the shipped agent), not from random weights.

Only the weights are taken: the optimizer, the step counters (so ``total_steps``,
``max_minutes`` and the learning-rate schedule are this run's own), the RNG states and the
self-play pool start fresh, and the run writes to its own run dir. The checkpoint's policy
spec (model settings, observation and action sizes) must be this config's. ``resume=`` wins:
a resumed run has its own weights.
"""

from __future__ import annotations

import logging

import torch

from mapleenv.encoders import encoder_name
from mapleenv.policies import check_network, policy_spec, snapshot_encoder, to_plain
from trainer.config import ConfigError
from trainer.run.checkpoint import load_checkpoint, resolve_checkpoint

log = logging.getLogger(__name__)


def init_weights(policy: torch.nn.Module, path: str, encoder: object = None) -> None:
    """Load the network weights of the checkpoint at ``path`` (a file or a run dir) into
    ``policy``; a checkpoint of another network, or one trained on another encoder than
    ``encoder`` (a name; old names are their new ones), is one :class:`ConfigError` line."""
    source = resolve_checkpoint(path)
    ckpt = load_checkpoint(source)
    theirs = encoder_name(snapshot_encoder(ckpt))
    if isinstance(encoder, str) and theirs != encoder_name(encoder):
        raise ConfigError(
            f"init_from={path}: its network reads the {theirs} encoder, this run's env "
            f"encoder is {encoder_name(encoder)} (set env.encoder={theirs})"
        )
    if ckpt.get("policy") != to_plain(policy_spec(policy)):
        raise ConfigError(
            f"init_from={path}: its network is not this config's (model, obs or action "
            f"sizes differ): {ckpt.get('policy')} vs {policy_spec(policy)}"
        )
    check_network(ckpt, str(source))
    policy.load_state_dict(ckpt["model"])
    log.info(
        "init_from: the network starts from %s (step %s there)", source, ckpt.get("global_step")
    )
