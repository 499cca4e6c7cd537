"""Entity-attention recurrent actor-critic over the rich encoder's battle layout.

The flat rich observation is cut into tokens (own 6 Pokémon, the opponent's 6, our active's
4 moves, one context token), a small transformer relates them every step, and an LSTM on
the pooled tokens carries memory across turns. Each action is scored from the token it acts
on (switch *i* from own Pokémon *i*, move *k* and its Tera form from move token *k*), so
the network knows which action belongs to which entity. Token layout: docs/observation.md.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from mapleenv.encoders.features import layout
from mapleenv.policies.config import ModelConfig
from mapleenv.policies.entity_trunk import EntityAttentionPolicy, Scorer, linear
from mapleenv.policies.masking import mask_logits
from mapleenv.policies.recurrent import Hidden

N_ACTIONS = 26  # poke-env SinglesEnv: 6 switches, then 5 forms x 4 move slots
MOVE_FORMS = 5  # plain, mega, z-move, dynamax, tera: action 6 + 4 * form + slot
TEAM = layout.TEAM_SIZE
SLOTS = layout.MOVE_SLOTS
KINDS = ("own", "opponent", "move", "context")  # token kind embeddings
CONTEXT_BLOCKS = ("threat", "speed", "field", "battle")


def _block(name: str) -> layout.Block:
    return next(b for b in layout.LAYOUT if b.name == name)


def _span(name: str) -> slice:
    block = _block(name)
    start = layout.OFFSETS[name]
    return slice(start, start + block.width * block.repeat)


POKEMON_WIDTH = _block("own_team").width
ACTIVE_WIDTH = _block("own_active").width
MOVE_WIDTH = _block("moves").width
CONTEXT_WIDTH = sum(_block(name).width for name in CONTEXT_BLOCKS)
PRESENT = _block("own_team").offsets["present"]
ACTIVE = _block("own_team").offsets["active"]
MOVE_PRESENT = _block("moves").offsets["present"]
N_TOKENS = 2 * TEAM + SLOTS + 1


def _indices(spans: list[slice]) -> torch.Tensor:
    return torch.cat([torch.arange(sp.start, sp.stop) for sp in spans])


# one gather each instead of a slice per block (fewer small ops per step)
_CONTEXT_INDEX = _indices([_span(name) for name in CONTEXT_BLOCKS])
_PRESENT_INDEX = torch.cat(
    [
        _indices([_span("own_team")]).view(TEAM, POKEMON_WIDTH)[:, PRESENT],
        _indices([_span("opponent_team")]).view(TEAM, POKEMON_WIDTH)[:, PRESENT],
        _indices([_span("moves")]).view(SLOTS, MOVE_WIDTH)[:, MOVE_PRESENT],
    ]
)
_KIND_INDEX = torch.tensor([0] * TEAM + [1] * TEAM + [2] * SLOTS + [3])


class BattleTokens(nn.Module):
    """Cut a rich observation ``[..., 1453]`` into embedded tokens ``[..., 17, d]`` and the
    key padding mask ``[..., 17]`` (True: an empty opponent or move slot). A ``singles_sets``
    layout's extra blocks (``move_futility``, ``opponent_sets``) join the move and opponent
    tokens through their own linear maps (absent for ``singles_entities``: its checkpoints load as
    is)."""

    def __init__(self, d: int, lay: layout.Layout = layout.SINGLES_ENTITIES) -> None:
        super().__init__()
        self.extra = {
            name: (lay.span(name), lay.block(name).width)
            for name in ("move_futility", "opponent_sets")
            if name in lay.offsets
        }
        for name, (_, width) in self.extra.items():
            self.add_module(name, linear(width, d, 1.0))
        self.pokemon = linear(POKEMON_WIDTH, d, 1.0)
        self.own_active = linear(ACTIVE_WIDTH, d, 1.0)
        self.opponent_active = linear(ACTIVE_WIDTH, d, 1.0)
        self.move = linear(MOVE_WIDTH, d, 1.0)
        self.context = linear(CONTEXT_WIDTH, d, 1.0)
        self.kind = nn.Parameter(torch.zeros(len(KINDS), d))
        nn.init.normal_(self.kind, std=0.02)
        for name, index in (
            ("context_index", _CONTEXT_INDEX),
            ("present_index", _PRESENT_INDEX),
            ("kind_index", _KIND_INDEX),
        ):
            self.register_buffer(name, index.clone(), persistent=False)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        lead = obs.shape[:-1]
        teams = obs[..., _span("own_team").start : _span("opponent_team").stop]
        teams = teams.reshape(*lead, 2 * TEAM, POKEMON_WIDTH)  # own 6, then the opponent's 6
        moves = obs[..., _span("moves")].reshape(*lead, SLOTS, MOVE_WIDTH)
        active = torch.cat(  # the active Pokémon's boosts and volatiles join its own token
            [
                self.own_active(obs[..., _span("own_active")])
                .unsqueeze(-2)
                .expand(*lead, TEAM, -1),
                self.opponent_active(obs[..., _span("opponent_active")])
                .unsqueeze(-2)
                .expand(*lead, TEAM, -1),
            ],
            dim=-2,
        )
        team_tok = self.pokemon(teams) + teams[..., ACTIVE : ACTIVE + 1] * active
        move_tok = self.move(moves)
        for name, (span, width) in self.extra.items():
            extra = getattr(self, name)(obs[..., span].reshape(*lead, -1, width))
            if name == "move_futility":
                move_tok = move_tok + extra
            else:  # opponent_sets: the opponent's 6 tokens
                team_tok = torch.cat([team_tok[..., :TEAM, :], team_tok[..., TEAM:, :] + extra], -2)
        context = obs.index_select(-1, self.context_index)
        tokens = torch.cat(
            [team_tok, move_tok, self.context(context).unsqueeze(-2)], dim=-2
        ) + self.kind.index_select(0, self.kind_index)
        # the context token (last) is never empty
        empty = F.pad(obs.index_select(-1, self.present_index) < 0.5, (0, 1), value=False)
        return tokens, empty


class AttentionActorCritic(EntityAttentionPolicy):
    """Transformer over battle entities + LSTM memory; the LSTM policy's exact contract.

    ``forward(obs, action_mask, hidden, episode_start) -> (logits, value, new_hidden)`` in
    step form (``obs [B, D]``) or sequence form (``obs [T, B, D]``); ``hidden`` is ``(h, c)``
    of ``[num_layers, B, hidden_size]``, zeroed where ``episode_start`` is set.
    """

    team_size = TEAM

    def __init__(self, obs_dim: int, n_actions: int, cfg: ModelConfig) -> None:
        super().__init__()
        lay = layout.for_size(obs_dim)  # singles_entities or singles_sets, by size
        if lay is None or n_actions != N_ACTIONS:
            sizes = "/".join(str(v.size) for v in layout.LAYOUTS.values())
            raise ValueError(
                f"model.kind=attention reads a singles entity layout ({sizes} features, "
                f"{N_ACTIONS} actions), got obs {obs_dim} / actions {n_actions}: "
                "use env.encoder=singles_sets or env.encoder=singles_entities"
            )
        if cfg.action_head == "pair":  # its head scores the singles layout's move/switch tokens
            raise ValueError("model.action_head=pair needs model.kind lstm or mlp (doubles)")
        self.obs_dim, self.n_actions = obs_dim, n_actions
        d, h = cfg.token_size, cfg.hidden_size
        self.tokens = BattleTokens(d, lay)
        self._build_trunk(cfg)
        self.switch_head = Scorer(d, h, 1, 0.01)
        self.move_head = Scorer(d, h, MOVE_FORMS, 0.01)
        self._build_value_heads()

    def _features(
        self, obs: torch.Tensor, hidden: Hidden, episode_start: torch.Tensor
    ) -> tuple[tuple[torch.Tensor, ...], Hidden]:
        """The context token and the LSTM memory ``[S, h]`` (``S = T * B``), own and move
        tokens ``[S, K, d]`` after the transformer, and the new state."""
        steps, batch = episode_start.shape
        x, empty = self.tokens(obs.reshape(steps * batch, -1))
        x, memory, new_hidden = self._relate_and_remember(x, empty, hidden, episode_start)
        own, moves, context = x[:, :TEAM], x[:, 2 * TEAM : 2 * TEAM + SLOTS], x[:, -1]
        return (context, memory, own, moves), new_hidden

    def _heads(
        self, features: tuple[torch.Tensor, ...], action_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked logits ``[T, B, A]`` and value ``[T, B]``: each action scored from the
        token it acts on, the value from the context token."""
        _, memory, own, moves = features
        steps, batch = action_mask.shape[:2]
        switch = self.switch_head(own, memory).squeeze(-1)  # [S, 6]
        move = self.move_head(moves, memory)  # [S, 4, 5]
        logits = torch.cat([switch, move.transpose(1, 2).reshape(steps * batch, -1)], dim=-1)
        logits = mask_logits(logits.float().view(steps, batch, -1), action_mask)
        return logits, self._value(features).float().view(steps, batch)
