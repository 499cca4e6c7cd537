"""``ActorCritic``: the stateless LSTM and MLP actor-critic (``model.kind=lstm|mlp``).

Its policy head is one linear layer over the actions, or on a doubles env's joint space the
factorized pair head (``model.action_head``, :mod:`mapleenv.policies.pair_head`).

Both share one signature, ``forward(obs, action_mask, hidden, episode_start) -> (logits,
value, new_hidden)``, in a step form (``obs [B, D]``, ``episode_start [B]``) and a sequence
form (``obs [T, B, D]``, ``episode_start [T, B]``). The caller owns the recurrent state: a
tuple ``(h, c)`` of ``[layers, B, state]`` tensors for the LSTM, ``()`` for the MLP. The state
of an env is zeroed before a step whose ``episode_start`` is set, and inside a sequence the
state never crosses an episode start (see :mod:`mapleenv.policies.recurrent`).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from mapleenv.policies.base import StatelessPolicy
from mapleenv.policies.config import ActionHead, ModelConfig
from mapleenv.policies.masking import mask_logits
from mapleenv.policies.pair_head import PairHead, resolve_action_head
from mapleenv.policies.recurrent import Hidden, run_lstm, zero_state

_ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}


def _mlp(sizes: list[int], activation: str) -> nn.Sequential:
    layers: list[nn.Module] = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [_init(nn.Linear(fan_in, fan_out), math.sqrt(2)), _ACTIVATIONS[activation]()]
    return nn.Sequential(*layers)


def _init(layer: nn.Linear, gain: float) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


class Trunk(nn.Module):
    """Encoder MLP, optionally followed by an LSTM."""

    def __init__(self, obs_dim: int, cfg: ModelConfig) -> None:
        super().__init__()
        self.encoder = _mlp([obs_dim, *cfg.encoder_sizes], cfg.activation)
        enc_dim = cfg.encoder_sizes[-1] if cfg.encoder_sizes else obs_dim
        self.lstm: nn.LSTM | None = None
        self.out_dim = enc_dim
        if cfg.kind == "lstm":
            self.lstm = nn.LSTM(enc_dim, cfg.hidden_size, num_layers=cfg.num_layers)
            for name, param in self.lstm.named_parameters():
                if "weight" in name:
                    nn.init.orthogonal_(param, 1.0)
                else:
                    nn.init.zeros_(param)
            self.out_dim = cfg.hidden_size

    def forward(
        self, obs: torch.Tensor, hidden: Hidden, episode_start: torch.Tensor
    ) -> tuple[torch.Tensor, Hidden]:
        x = self.encoder(obs)
        if self.lstm is None:
            return x, ()
        return run_lstm(self.lstm, x, hidden, episode_start)


class ActorCritic(StatelessPolicy):
    """Actor-critic over ``Trunk``s; ``shared_trunk=False`` gives the critic its own trunk.

    With separate trunks the two LSTM states are concatenated along the last dimension, so
    the caller still sees one ``(h, c)`` pair of ``[layers, B, state_size]``.
    """

    def __init__(self, obs_dim: int, n_actions: int, cfg: ModelConfig) -> None:
        super().__init__()
        if cfg.kind not in ("lstm", "mlp"):
            raise ValueError(f"ActorCritic builds model.kind lstm or mlp, got {cfg.kind!r}")
        if cfg.activation not in _ACTIVATIONS:
            raise ValueError(f"model.activation must be one of {sorted(_ACTIVATIONS)}")
        self.cfg = cfg
        self.obs_dim, self.n_actions = obs_dim, n_actions
        self.recurrent = cfg.kind == "lstm"
        self.trunk = Trunk(obs_dim, cfg)
        self.critic_trunk = None if cfg.shared_trunk else Trunk(obs_dim, cfg)
        feat = self.trunk.out_dim
        head_in = cfg.head_sizes[-1] if cfg.head_sizes else feat
        # model.action_head: flat, or the per-slot pair head on a doubles joint space
        self.action_head = resolve_action_head(cfg.action_head, n_actions)
        last: nn.Module = _init(nn.Linear(head_in, n_actions), 0.01)
        if self.action_head == ActionHead.pair:
            last = PairHead(head_in, math.isqrt(n_actions), cfg.pair_rank)
        self.policy_head = nn.Sequential(_mlp([feat, *cfg.head_sizes], cfg.activation), last)
        self.value_head = nn.Sequential(
            _mlp([feat, *cfg.head_sizes], cfg.activation),
            _init(nn.Linear(cfg.head_sizes[-1] if cfg.head_sizes else feat, 1), 1.0),
        )
        self.aux_head = None  # model.aux_classes: the opponent-action head on the actor's features
        if cfg.aux_classes > 0:
            self.aux_head = nn.Sequential(
                _mlp([feat, *cfg.head_sizes], cfg.activation),
                _init(
                    nn.Linear(cfg.head_sizes[-1] if cfg.head_sizes else feat, cfg.aux_classes),
                    0.01,
                ),
            )

    @property
    def state_size(self) -> int:
        """Size of the last dimension of ``h`` and ``c`` (0 for the MLP)."""
        if not self.recurrent:
            return 0
        return self.cfg.hidden_size * (1 if self.cfg.shared_trunk else 2)

    def initial_state(self, batch: int, device: torch.device | str = "cpu") -> Hidden:
        """A zero state for ``batch`` envs: ``(h, c)`` or ``()`` for the MLP."""
        if not self.recurrent:
            return ()
        return zero_state(self.cfg.num_layers, batch, self.state_size, device)

    def _features(
        self, obs: torch.Tensor, hidden: Hidden, episode_start: torch.Tensor
    ) -> tuple[tuple[torch.Tensor, torch.Tensor], Hidden]:
        """The actor's and the critic's features ``[T, B, F]`` and the new state."""
        if self.critic_trunk is None:
            feat, new_hidden = self.trunk(obs, hidden, episode_start)
            return (feat, feat), new_hidden
        half = self.cfg.hidden_size
        actor_h = tuple(x[..., :half] for x in hidden)
        critic_h = tuple(x[..., half:] for x in hidden)
        feat, actor_new = self.trunk(obs, actor_h, episode_start)
        critic_feat, critic_new = self.critic_trunk(obs, critic_h, episode_start)
        new_hidden = tuple(
            torch.cat([a, c], dim=-1) for a, c in zip(actor_new, critic_new, strict=True)
        )
        return (feat, critic_feat), new_hidden

    def _heads(
        self, features: tuple[torch.Tensor, torch.Tensor], action_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked logits and value from the actor's and the critic's features."""
        feat, critic_feat = features
        logits = mask_logits(self.policy_head(feat).float(), action_mask)
        return logits, self.value_head(critic_feat).float().squeeze(-1)

    def _aux_logits(self, features: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """The aux head on the actor's features."""
        assert self.aux_head is not None
        return self.aux_head(features[0])
