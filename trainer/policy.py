"""Stateless actor-critic policies (LSTM and MLP) with masked logits.

Both share one signature, ``forward(obs, action_mask, hidden, episode_start) -> (logits,
value, new_hidden)``, in a step form (``obs [B, D]``, ``episode_start [B]``) and a sequence
form (``obs [T, B, D]``, ``episode_start [T, B]``). The caller owns the recurrent state: a
tuple ``(h, c)`` of ``[layers, B, state]`` tensors for the LSTM, ``()`` for the MLP. The state
of an env is zeroed before a step whose ``episode_start`` is set, and inside a sequence the
state never crosses an episode start (see :mod:`trainer.sequence`).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf
from torch import nn

from trainer.config import ModelConfig
from trainer.sequence import Hidden, run_lstm

_ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}


def mask_logits(logits: torch.Tensor, action_mask: torch.Tensor) -> torch.Tensor:
    """Give illegal actions the dtype's most negative finite logit (zero probability)."""
    return logits.masked_fill(~action_mask.bool(), torch.finfo(logits.dtype).min)


def sample_actions(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample one action per row of masked ``logits``; returns ``(actions, log_probs)``."""
    log_probs = torch.log_softmax(logits, dim=-1)
    flat = log_probs.reshape(-1, log_probs.shape[-1])
    actions = torch.multinomial(flat.exp(), 1).view(log_probs.shape[:-1])
    return actions, log_probs.gather(-1, actions.unsqueeze(-1)).squeeze(-1)


def log_prob_entropy(
    logits: torch.Tensor, action_mask: torch.Tensor, actions: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probabilities of ``actions`` and the entropy over legal actions."""
    log_probs = torch.log_softmax(logits, dim=-1)
    probs = log_probs.exp()
    entropy = -torch.where(action_mask.bool(), probs * log_probs, 0.0).sum(-1)
    return log_probs.gather(-1, actions.unsqueeze(-1)).squeeze(-1), entropy


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


class ActorCritic(nn.Module):
    """Actor-critic over ``Trunk``s; ``shared_trunk=False`` gives the critic its own trunk.

    With separate trunks the two LSTM states are concatenated along the last dimension, so
    the caller still sees one ``(h, c)`` pair of ``[layers, B, state_size]``.
    """

    def __init__(self, obs_dim: int, n_actions: int, cfg: ModelConfig) -> None:
        super().__init__()
        if cfg.kind not in ("lstm", "mlp"):
            raise ValueError(f"model.kind must be 'lstm' or 'mlp', got {cfg.kind!r}")
        if cfg.activation not in _ACTIVATIONS:
            raise ValueError(f"model.activation must be one of {sorted(_ACTIVATIONS)}")
        self.cfg = cfg
        self.obs_dim, self.n_actions = obs_dim, n_actions
        self.recurrent = cfg.kind == "lstm"
        self.trunk = Trunk(obs_dim, cfg)
        self.critic_trunk = None if cfg.shared_trunk else Trunk(obs_dim, cfg)
        feat = self.trunk.out_dim
        self.policy_head = nn.Sequential(
            _mlp([feat, *cfg.head_sizes], cfg.activation),
            _init(nn.Linear(cfg.head_sizes[-1] if cfg.head_sizes else feat, n_actions), 0.01),
        )
        self.value_head = nn.Sequential(
            _mlp([feat, *cfg.head_sizes], cfg.activation),
            _init(nn.Linear(cfg.head_sizes[-1] if cfg.head_sizes else feat, 1), 1.0),
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
        shape = (self.cfg.num_layers, batch, self.state_size)
        return (torch.zeros(shape, device=device), torch.zeros(shape, device=device))

    def forward(
        self,
        obs: torch.Tensor,
        action_mask: torch.Tensor,
        hidden: Hidden,
        episode_start: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, Hidden]:
        """Masked logits, value and the new state; see the module docstring for shapes."""
        step_form = episode_start.dim() == 1
        if step_form:
            obs, action_mask, episode_start = obs[None], action_mask[None], episode_start[None]
        if self.critic_trunk is None:
            feat, new_hidden = self.trunk(obs, hidden, episode_start)
            critic_feat = feat
        else:
            half = self.cfg.hidden_size
            actor_h = tuple(x[..., :half] for x in hidden)
            critic_h = tuple(x[..., half:] for x in hidden)
            feat, actor_new = self.trunk(obs, actor_h, episode_start)
            critic_feat, critic_new = self.critic_trunk(obs, critic_h, episode_start)
            new_hidden = tuple(
                torch.cat([a, c], dim=-1) for a, c in zip(actor_new, critic_new, strict=True)
            )
        logits = mask_logits(self.policy_head(feat).float(), action_mask)
        value = self.value_head(critic_feat).float().squeeze(-1)
        if step_form:
            logits, value = logits[0], value[0]
        return logits, value, new_hidden


def build_policy(obs_dim: int, n_actions: int, model_cfg: ModelConfig | Any) -> nn.Module:
    """Build a policy from a ``ModelConfig`` or a mapping with its fields (``model.kind``:
    lstm | mlp -> :class:`ActorCritic`, attention -> ``AttentionActorCritic``)."""
    if not isinstance(model_cfg, ModelConfig):
        if isinstance(model_cfg, DictConfig):
            model_cfg = OmegaConf.to_container(model_cfg, resolve=True)
        model_cfg = ModelConfig(**dict(model_cfg))
    if model_cfg.kind == "attention":
        from trainer.policies.attention import AttentionActorCritic

        return AttentionActorCritic(obs_dim, n_actions, model_cfg)
    return ActorCritic(obs_dim, n_actions, model_cfg)


def policy_spec(policy: ActorCritic) -> dict[str, Any]:
    """What a checkpoint needs to rebuild ``policy`` without Hydra."""
    return {
        "obs_dim": policy.obs_dim,
        "n_actions": policy.n_actions,
        "model": dataclasses.asdict(policy.cfg),
    }


def load_policy(
    path: str | Path, device: torch.device | str = "cpu"
) -> tuple[ActorCritic, DictConfig]:
    """Load a checkpoint's policy (eval mode, on ``device``) and its run config.

    Needs no Hydra: the checkpoint stores the model config and the obs/action sizes.
    """
    from trainer.checkpoint import load_checkpoint

    ckpt = load_checkpoint(path, map_location=device)
    spec = ckpt["policy"]
    policy = build_policy(spec["obs_dim"], spec["n_actions"], spec["model"])
    policy.load_state_dict(ckpt["model"])
    policy.to(device).eval()
    return policy, OmegaConf.create(ckpt["config"])
