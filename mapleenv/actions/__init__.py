"""Discrete actions and their exact masks, for singles (:mod:`.singles`) and doubles
(:mod:`.doubles`) battles.

The functions here take the battle and pick the numbering by its kind (poke-env's
``DoubleBattle`` or ``Battle``); :func:`action_space_size` takes the kind as ``doubles``.
When no decision is pending (a "wait" request or a finished battle) the mask holds action
0 only -- poke-env's convention -- so it is never all-zero.
"""

from __future__ import annotations

import numpy as np
from poke_env.battle.abstract_battle import AbstractBattle
from poke_env.battle.double_battle import DoubleBattle
from poke_env.player.battle_order import BattleOrder, DefaultBattleOrder

from mapleenv.actions import doubles as _doubles
from mapleenv.actions import singles
from mapleenv.actions.orders import by_slot, switch_slot, teampreview_in_order
from mapleenv.actions.singles import NUM_MOVE_SLOTS, NUM_SWITCHES, move_slots

__all__ = [
    "NUM_MOVE_SLOTS",
    "NUM_SWITCHES",
    "action_mask",
    "action_space_size",
    "action_to_order",
    "by_slot",
    "describe_legal",
    "is_doubles",
    "legal_actions",
    "mask_from_legal",
    "move_slots",
    "order_to_action",
    "switch_slot",
    "teampreview_in_order",
]


def is_doubles(battle: AbstractBattle) -> bool:
    """Whether ``battle`` is a double battle (two active Pokémon a side)."""
    return isinstance(battle, DoubleBattle)


def action_space_size(gen: int, doubles: bool = False) -> int:
    """Number of actions of a generation's singles (or ``doubles``) battles."""
    return _doubles.action_space_size(gen) if doubles else singles.action_space_size(gen)


def legal_actions(battle: AbstractBattle) -> dict[int, BattleOrder]:
    """Map each legal action to its order; empty when no decision is pending."""
    if isinstance(battle, DoubleBattle):
        return _doubles.legal_actions(battle)
    return singles.legal_actions(battle)  # type: ignore[arg-type]


def mask_from_legal(legal: dict[int, BattleOrder], size: int) -> np.ndarray:
    """int8 mask of ``size`` from :func:`legal_actions` (action 0 if nothing is legal)."""
    mask = np.zeros(size, dtype=np.int8)
    if legal:
        mask[list(legal)] = 1
    else:
        mask[0] = 1
    return mask


def action_mask(battle: AbstractBattle) -> np.ndarray:
    """Exact int8 mask of legal actions (action 0 only when no decision is pending)."""
    size = action_space_size(battle.gen, doubles=is_doubles(battle))
    return mask_from_legal(legal_actions(battle), size)


def action_to_order(action: int, battle: AbstractBattle) -> BattleOrder:
    """The order for ``action``; ``ValueError`` if the action is not legal now.

    With no decision pending, action 0 gives ``DefaultBattleOrder`` (the mask's only
    entry then).
    """
    action = int(action)
    legal = legal_actions(battle)
    if not legal and action == 0:
        return DefaultBattleOrder()
    if action not in legal:
        raise ValueError(
            f"illegal action {action} in {battle.battle_tag} (turn {battle.turn}); "
            f"legal actions: {describe_legal(legal)}"
        )
    return legal[action]


def order_to_action(order: BattleOrder, battle: AbstractBattle) -> int:
    """The action of a legal order (compared by its message); ``ValueError`` otherwise."""
    for action, legal_order in legal_actions(battle).items():
        if legal_order.message == order.message:
            return action
    raise ValueError(f"order {order.message!r} is not legal in {battle.battle_tag}")


def describe_legal(legal: dict[int, BattleOrder]) -> str:
    """``"6 (/choose move tackle), ..."`` for error messages."""
    return ", ".join(f"{a} ({o.message})" for a, o in sorted(legal.items())) or "none"
