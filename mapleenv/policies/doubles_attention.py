"""Entity-attention recurrent actor-critic for double battles, with per-slot heads.

The ``doubles_entities`` observation (:mod:`mapleenv.encoders.doubles.entities`) is cut into 21
tokens (our 6 Pokémon, the opponent's 6, our two actives' 4 moves each, one context token holding
the ``doubles_calc`` vector), related by the same transformer blocks as the singles attention
policy (:mod:`mapleenv.policies.attention`), with an LSTM on the pooled tokens for memory.

Each active slot is scored from the tokens its sub-actions act on, read beside the memory
and that slot's own active Pokémon token (plus a learned slot embedding): *pass* from the
context token, *switch i* from our Pokémon token *i*, *move k at target t in form f* from
the slot's move token *k* (5 targets x the generation's forms). The two slots' sub-action
logits join into the joint space as the pair head does (:mod:`mapleenv.policies.pair_head`):
``logits[a1 * S + a2] = l1[a1] + l2[a2] + u1[a1] . u2[a2]``, masked with the env's exact
joint mask, so sampling and the learner's log-probabilities stay exact.
"""

from __future__ import annotations

import torch
from torch import nn

from mapleenv.actions.doubles import FIRST_MOVE, MOVE_BLOCK, NUM_MOVE_SLOTS, NUM_TARGETS
from mapleenv.encoders.doubles.entities import LAYOUT, TEAM
from mapleenv.policies.config import ActionHead, ModelConfig
from mapleenv.policies.entity_trunk import EntityAttentionPolicy, Scorer, linear
from mapleenv.policies.masking import mask_logits
from mapleenv.policies.pair_head import doubles_slots, join_slots
from mapleenv.policies.recurrent import Hidden

KINDS = ("own", "opponent", "move a", "move b", "context")
_OWN = LAYOUT.span("own_team")
_OPP = LAYOUT.span("opponent_team")
_MOVES = LAYOUT.span("moves")
_CONTEXT = LAYOUT.span("context")
POKEMON_WIDTH = LAYOUT.block("own_team").width
MOVE_WIDTH = LAYOUT.block("moves").width
_PRESENT = LAYOUT.block("own_team").offsets["present"]
_SLOT = LAYOUT.block("own_team").offsets["slot"]
_MOVE_PRESENT = LAYOUT.block("moves").offsets["present"]
MOVE_TOKENS = 2 * NUM_MOVE_SLOTS
N_TOKENS = 2 * TEAM + MOVE_TOKENS + 1


class DoublesTokens(nn.Module):
    """A ``doubles_entities`` observation ``[N, 2187]`` -> tokens ``[N, 21, d]``, the key padding
    mask ``[N, 21]`` (True: an empty Pokémon or move slot) and our Pokémon's active-slot flags
    ``[N, 6, 2]``."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.pokemon = linear(POKEMON_WIDTH, d, 1.0)
        self.move = linear(MOVE_WIDTH, d, 1.0)
        self.context = linear(_CONTEXT.stop - _CONTEXT.start, d, 1.0)
        self.kind = nn.Parameter(torch.zeros(len(KINDS), d))
        nn.init.normal_(self.kind, std=0.02)
        kinds = [0] * TEAM + [1] * TEAM + [2] * NUM_MOVE_SLOTS + [3] * NUM_MOVE_SLOTS + [4]
        self.register_buffer("kind_index", torch.tensor(kinds), persistent=False)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        n = obs.shape[0]
        teams = obs[:, _OWN.start : _OPP.stop].reshape(n, 2 * TEAM, POKEMON_WIDTH)
        moves = obs[:, _MOVES].reshape(n, MOVE_TOKENS, MOVE_WIDTH)
        tokens = torch.cat(
            [self.pokemon(teams), self.move(moves), self.context(obs[:, _CONTEXT]).unsqueeze(1)],
            dim=1,
        ) + self.kind.index_select(0, self.kind_index)
        empty = torch.cat(
            [
                teams[..., _PRESENT] < 0.5,
                moves[..., _MOVE_PRESENT] < 0.5,
                torch.zeros(n, 1, dtype=torch.bool, device=obs.device),  # context: never empty
            ],
            dim=1,
        )
        return tokens, empty, teams[:, :TEAM, _SLOT : _SLOT + 2]


class DoublesAttentionActorCritic(EntityAttentionPolicy):
    """Transformer over doubles entities + LSTM memory + per-slot heads joined over the joint
    action space; the contract of every Maple policy (:class:`StatelessPolicy`)."""

    team_size = TEAM

    def __init__(self, obs_dim: int, n_actions: int, cfg: ModelConfig) -> None:
        super().__init__()
        slots = doubles_slots(n_actions)
        if obs_dim != LAYOUT.size or not slots:
            raise ValueError(
                f"model.kind=attention on doubles reads the doubles_entities encoder "
                f"({LAYOUT.size} features, a joint action space), got obs {obs_dim} / actions "
                f"{n_actions}: "
                "use env.encoder=doubles_entities"
            )
        if cfg.action_head == ActionHead.flat:
            raise ValueError(
                "model.kind=attention scores each doubles slot: model.action_head auto or pair"
            )
        self.action_head = ActionHead.pair.value  # per-slot logits + a pair term (the spec's)
        self.obs_dim, self.n_actions, self.slots = obs_dim, n_actions, slots
        self.forms = (slots - FIRST_MOVE) // MOVE_BLOCK
        d, h = cfg.token_size, cfg.hidden_size
        self.tokens = DoublesTokens(d)
        self._build_trunk(cfg)
        self.slot = nn.Parameter(torch.zeros(2, d))  # which slot a head scores for
        nn.init.normal_(self.slot, std=0.02)
        self.pass_head = Scorer(d, h + d, 1, 0.01)
        self.switch_head = Scorer(d, h + d, 1, 0.01)
        self.move_head = Scorer(d, h + d, NUM_TARGETS * self.forms, 0.01)
        rank = cfg.pair_rank
        self.u1 = linear(h + d, slots * rank, 1.0) if rank else None
        self.u2 = linear(h + d, slots * rank, 1.0) if rank else None
        if self.u2 is not None:  # the pair term starts at exactly zero and still learns
            nn.init.zeros_(self.u2.weight)
        self._build_value_heads()

    def _features(
        self, obs: torch.Tensor, hidden: Hidden, episode_start: torch.Tensor
    ) -> tuple[tuple[torch.Tensor, ...], Hidden]:
        """The context token, the memory ``[S, h]``, own and move tokens after the
        transformer, each slot's reading ``[S, 2, h + d]`` (memory, its active's token) and
        the new state."""
        steps, batch = episode_start.shape
        x, empty, slot_flags = self.tokens(obs.reshape(steps * batch, -1))
        x, memory, new_hidden = self._relate_and_remember(x, empty, hidden, episode_start)
        own, moves, context = x[:, :TEAM], x[:, 2 * TEAM : 2 * TEAM + MOVE_TOKENS], x[:, -1]
        actives = slot_flags.transpose(1, 2).to(x.dtype) @ own  # [S, 2, d]; 0 for an empty slot
        reading = torch.cat([memory.unsqueeze(1).expand(-1, 2, -1), actives + self.slot], dim=-1)
        return (context, memory, own, moves, reading), new_hidden

    def _heads(
        self, features: tuple[torch.Tensor, ...], action_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked joint logits ``[T, B, S * S]`` and value ``[T, B]``."""
        context, _, own, moves, reading = features
        steps, batch = action_mask.shape[:2]
        n, d = own.shape[0], own.shape[-1]
        per_slot = reading.reshape(2 * n, -1)  # row 2i + p: step i, slot p
        passes = self.pass_head(context.repeat_interleave(2, 0).unsqueeze(1), per_slot)
        switches = self.switch_head(own.repeat_interleave(2, 0), per_slot)
        move = self.move_head(moves.reshape(2 * n, NUM_MOVE_SLOTS, d), per_slot)
        move = move.view(2 * n, NUM_MOVE_SLOTS, self.forms, NUM_TARGETS).transpose(1, 2)
        sub = torch.cat(
            [passes.squeeze(-1), switches.squeeze(-1), move.reshape(2 * n, -1)], dim=-1
        ).view(n, 2, self.slots)
        pair = None
        if self.u1 is not None and self.u2 is not None:
            pair = (self.u1(reading[:, 0]), self.u2(reading[:, 1]))
        joint = join_slots(sub[:, 0], sub[:, 1], pair)
        logits = mask_logits(joint.float().view(steps, batch, -1), action_mask)
        return logits, self._value(features).float().view(steps, batch)
