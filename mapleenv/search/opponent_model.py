"""Search's policy opponent model (``search.opponent=policy``): the agent's own network in
the opponent's seat of each world. The opponent's battle is the public log replayed from
its side plus the world's request for it (:mod:`mapleenv.search.mirror`), encoded as the
agent's own battles are; the network's probabilities over its legal actions become the
world's replies (the likeliest ``search.replies``) and their weights in the opponent model.

The network runs from a zero recurrent state (the opponent's own memory of the battle is
not known): a mid-battle read of the position alone. ``scripts/search/search_replies.py``
measures how often the opponent's real choice is among the replies it gives
(docs/results/search.md).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from poke_env.battle import Battle
from poke_env.battle.move import Move
from poke_env.battle.pokemon import Pokemon
from poke_env.data import to_id_str
from poke_env.player.battle_order import BattleOrder

from mapleenv.actions import action_space_size, by_slot, mask_from_legal
from mapleenv.encoders import BattleEncoder, make_encoder, playable_actions
from mapleenv.search.mirror import foe_battle

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)


def choice_string(order: BattleOrder, battle: Battle) -> str | None:
    """``order`` as the search host names the opponent's choices (``move 2``,
    ``move 2 terastallize``, ``switch 4``: slots of the request), None if it has no slot."""
    target = order.order
    if isinstance(target, Pokemon):
        return by_slot(order, battle).message.removeprefix("/choose ")
    if not isinstance(target, Move):
        return None
    active = ((battle.last_request or {}).get("active") or [{}])[0]
    ids = [to_id_str(str(m.get("id", ""))) for m in active.get("moves") or ()]
    if target.id not in ids:
        return None
    tera = " terastallize" if getattr(order, "terastallize", False) else ""
    return f"move {ids.index(target.id) + 1}{tera}"


class PolicyOpponentModel:
    """The opponent's likely choices in each world, by ``policy`` (a recurrent policy as
    :func:`mapleenv.policies.policy_from_snapshot` makes) reading its seat's battle through
    ``encoder``; ``mask_futile`` as the policy was trained."""

    def __init__(
        self, policy: torch.nn.Module, encoder: str | BattleEncoder, mask_futile: bool = False
    ):
        self.policy = policy
        self.encoder = make_encoder(encoder)
        self.mask_futile = mask_futile

    def priors(
        self, view: Mapping[str, Any], requests: Sequence[Mapping[str, Any] | None]
    ) -> list[dict[str, float] | None]:
        """Per world (its opponent ``request``), the probability of each of the opponent's
        choices; None for a world whose opponent has no choice or whose battle could not be
        read (that world's replies are then the greedy reading's)."""
        role = {"p1": "p2", "p2": "p1"}.get(str(view.get("role")))
        log = view.get("log")
        out: list[dict[str, float] | None] = [None] * len(requests)
        if role is None or not log:
            return out
        battles, legals, rows = [], [], []
        for k, request in enumerate(requests):
            if not request or request.get("wait"):
                continue
            try:
                battle = foe_battle(log, role, dict(request), int(view.get("gen", 9)))
                legal = playable_actions(battle, self.mask_futile)
            except Exception as exc:  # noqa: BLE001 (poke-env's reading of an odd log)
                logger.debug("no opponent model for world %d: %s", k, exc)
                continue
            if legal:
                battles.append(battle)
                legals.append(legal)
                rows.append(k)
        if not battles:
            return out
        probs = self._probs(battles, legals)
        for k, battle, legal, p in zip(rows, battles, legals, probs, strict=True):
            prior: dict[str, float] = {}
            for action, order in legal.items():
                choice = choice_string(order, battle)
                if choice is not None:
                    prior[choice] = prior.get(choice, 0.0) + float(p[action])
            out[k] = prior or None
        return out

    def _probs(self, battles: list[Battle], legals: list[dict[int, BattleOrder]]) -> np.ndarray:
        """The policy's probabilities for each battle, from a zero recurrent state."""
        import torch

        size = action_space_size(battles[0].gen)
        obs = np.stack([self.encoder.encode(b) for b in battles]).astype(np.float32)
        np.clip(obs, self.encoder.low, self.encoder.high, out=obs)
        masks = np.stack([mask_from_legal(legal, size) for legal in legals])
        n = len(battles)
        device = next(self.policy.parameters()).device
        with torch.inference_mode():
            logits, _, _ = self.policy(
                torch.from_numpy(obs).to(device),
                torch.from_numpy(masks).bool().to(device),
                self.policy.initial_state(n, device),
                torch.ones(n, device=device),
            )
        return torch.softmax(logits.float(), dim=-1).cpu().numpy()


def make_opponent_model(
    config: Any, policy: torch.nn.Module, encoder: str | BattleEncoder, mask_futile: bool
) -> PolicyOpponentModel | None:
    """The opponent model ``config`` (a ``SearchConfig``) asks for: the policy's own with
    ``opponent=policy``, else None (the search host's greedy reading)."""
    if config.opponent != "policy":
        return None
    return PolicyOpponentModel(policy, encoder, mask_futile)
