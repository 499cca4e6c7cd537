"""The policy network's settings (``model.*``): one dataclass, the Hydra schema of the
``model`` group and what a checkpoint stores to rebuild its network."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class ModelKind(StrEnum):
    """``model.kind``: the policy network (:func:`mapleenv.policies.build_policy`)."""

    lstm = "lstm"
    mlp = "mlp"
    attention = "attention"


class ActionHead(StrEnum):
    """``model.action_head``: the policy's last layer (:mod:`mapleenv.policies.pair_head`)."""

    auto = "auto"  # pair on a doubles env's joint action space, else flat
    flat = "flat"  # one Linear(features, n_actions)
    pair = "pair"  # per-slot logits plus a low-rank pair term over S * S joint actions


class Activation(StrEnum):
    tanh = "tanh"
    relu = "relu"


@dataclass
class ModelConfig:
    """Actor-critic network; ``kind=mlp`` ignores the recurrent fields.

    Closed choices are plain strings checked against their enum (:class:`ModelKind`,
    :class:`Activation`, :class:`ActionHead`), so checkpoints keep plain values."""

    kind: str = "lstm"  # ModelKind
    encoder_sizes: list[int] = field(default_factory=lambda: [256])
    hidden_size: int = 256
    num_layers: int = 1
    head_sizes: list[int] = field(default_factory=list)
    shared_trunk: bool = True
    activation: str = "tanh"  # Activation
    # attention (needs env.encoder rich/rich2, or doubles3 on doubles): token width, layers, heads
    token_size: int = 128
    attention_layers: int = 2
    attention_heads: int = 4
    # auxiliary head predicting the opponent's action class (0: none, no parameters; the
    # learner's algo.aux_coef trains it): docs/training.md
    aux_classes: int = 0
    # the policy's last layer (lstm, mlp): auto = the factorized pair head on doubles, with
    # a rank-pair_rank interaction term (0: none); docs/training.md
    action_head: str = "auto"  # ActionHead
    pair_rank: int = 8
