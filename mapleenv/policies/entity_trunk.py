"""The trunk both attention policies share: battle tokens related by a small transformer,
an LSTM on the pooled tokens for memory, and the value and aux heads read from the context
token beside that memory.

A subclass of :class:`EntityAttentionPolicy` cuts its observation into tokens (our team's
first, then the opponent's, the context token last), builds its own action heads and
returns features that start with ``(context, memory)``; the layers, the state, the value
and the aux head are written here once (:mod:`mapleenv.policies.attention` for singles,
:mod:`mapleenv.policies.doubles_attention` for doubles).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from mapleenv.policies.base import StatelessPolicy
from mapleenv.policies.config import ModelConfig
from mapleenv.policies.recurrent import Hidden, run_lstm, zero_state


def linear(fan_in: int, fan_out: int, gain: float = math.sqrt(2)) -> nn.Linear:
    """A linear layer with orthogonal weights (``gain``) and zero bias."""
    layer = nn.Linear(fan_in, fan_out)
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


class Scorer(nn.Module):
    """Scores each token beside the step's recurrent memory: ``[S, K, d], [S, h] -> [S, K,
    outputs]``, a two-layer MLP on ``[token, memory]`` whose first layer is split so the
    memory is projected once per step, not once per token."""

    def __init__(self, d: int, h: int, outputs: int, gain: float) -> None:
        super().__init__()
        self.token = linear(d, d)
        self.memory = linear(h, d)
        nn.init.zeros_(self.memory.bias)
        self.out = linear(d, outputs, gain)

    def forward(self, tokens: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        return self.out(F.relu(self.token(tokens) + self.memory(memory).unsqueeze(1)))


class EntityBlock(nn.Module):
    """Pre-LayerNorm transformer block over a battle's tokens.

    Attention is written out (matmul + softmax): for so few tokens it is ~30% faster on a
    CPU than ``nn.TransformerEncoderLayer``'s fused kernels, forward and backward.
    """

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = linear(d, 3 * d, 1.0)
        self.out = linear(d, d, 1.0)
        self.ff1, self.ff2 = linear(d, 2 * d), linear(2 * d, d, 1.0)

    def forward(self, x: torch.Tensor, key_bias: torch.Tensor) -> torch.Tensor:
        """``x [S, K, d]``; ``key_bias [S, 1, 1, K]``: 0, or a large negative for empty slots."""
        s, k, d = x.shape
        q, key, v = self.qkv(self.norm1(x)).view(s, k, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        scores = q @ key.transpose(-1, -2) * (1.0 / math.sqrt(d // self.heads)) + key_bias
        x = x + self.out((scores.softmax(-1) @ v).transpose(1, 2).reshape(s, k, d))
        return x + self.ff2(F.relu(self.ff1(self.norm2(x))))


class EntityAttentionPolicy(StatelessPolicy):
    """Base of the attention policies: the transformer blocks, the memory LSTM, the
    recurrent state ``(h, c)`` of ``[num_layers, B, hidden_size]`` and the value and aux
    heads. A subclass calls :meth:`_build_trunk` after its token layer and
    :meth:`_build_value_heads` after its action heads (the order the weights are drawn in),
    and its features start with ``(context, memory)``."""

    recurrent = True
    team_size = 6  # tokens per team: ours first, then the opponent's

    def _build_trunk(self, cfg: ModelConfig) -> None:
        """The transformer blocks, their final norm and the memory LSTM."""
        if not cfg.shared_trunk:
            raise ValueError("model.kind=attention has one trunk: set model.shared_trunk=true")
        self.cfg = cfg
        d = cfg.token_size
        self.blocks = nn.ModuleList(
            EntityBlock(d, cfg.attention_heads) for _ in range(cfg.attention_layers)
        )
        self.norm = nn.LayerNorm(d)
        self.lstm = nn.LSTM(3 * d, cfg.hidden_size, num_layers=cfg.num_layers)
        for name, param in self.lstm.named_parameters():  # orthogonal weights, zero biases
            if "weight" in name:
                nn.init.orthogonal_(param, 1.0)
            else:
                nn.init.zeros_(param)

    def _build_value_heads(self) -> None:
        """The value head and the ``model.aux_classes`` opponent-action head, both read
        from the context token beside the memory."""
        d, h = self.cfg.token_size, self.cfg.hidden_size
        self.value_head = Scorer(d, h, 1, 1.0)
        aux = self.cfg.aux_classes
        self.aux_head = Scorer(d, h, aux, 0.01) if aux > 0 else None

    @property
    def state_size(self) -> int:
        return self.cfg.hidden_size

    def initial_state(self, batch: int, device: torch.device | str = "cpu") -> Hidden:
        """A zero state ``(h, c)`` of ``[num_layers, batch, hidden_size]``."""
        return zero_state(self.cfg.num_layers, batch, self.cfg.hidden_size, device)

    def _relate_and_remember(
        self, x: torch.Tensor, empty: torch.Tensor, hidden: Hidden, episode_start: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, Hidden]:
        """The transformer over tokens ``x [S, K, d]`` (``empty`` keys masked), then the LSTM
        over the context token and the two teams' mean tokens. Returns the tokens, the
        memory ``[S, h]`` and the new state."""
        steps, batch = episode_start.shape
        team = self.team_size
        key_bias = torch.where(empty, -1e4, 0.0).to(x.dtype)[:, None, None, :]
        for block in self.blocks:
            x = block(x, key_bias)
        x = self.norm(x)
        pooled = torch.cat(
            [
                x[:, -1],
                _masked_mean(x[:, :team], empty[:, :team]),
                _masked_mean(x[:, team : 2 * team], empty[:, team : 2 * team]),
            ],
            dim=-1,
        )
        pooled = pooled.view(steps, batch, -1)
        memory, new_hidden = run_lstm(self.lstm, pooled, hidden, episode_start)
        return x, memory.reshape(steps * batch, -1), new_hidden

    def _value(self, features: tuple[torch.Tensor, ...]) -> torch.Tensor:
        """The value ``[S]`` from the context token beside the memory."""
        context, memory = features[:2]
        return self.value_head(context.unsqueeze(1), memory).view(-1)

    def _aux_logits(self, features: tuple[torch.Tensor, ...]) -> torch.Tensor:
        """The aux head, read like the value: ``[S, 1, K]``."""
        assert self.aux_head is not None
        context, memory = features[:2]
        return self.aux_head(context.unsqueeze(1), memory)


def _masked_mean(x: torch.Tensor, empty: torch.Tensor) -> torch.Tensor:
    keep = (~empty).to(x.dtype).unsqueeze(-1)
    return (x * keep).sum(-2) / keep.sum(-2).clamp(min=1.0)
