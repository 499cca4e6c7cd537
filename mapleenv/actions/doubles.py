"""Discrete joint actions for double battles: one index for both active slots' orders.

Each slot has ``slot_space_size(gen)`` sub-actions, in poke-env's ``DoublesEnv`` numbering
less its ``default``/``forfeit`` codes and cut to the gimmicks of the generation:

========== ==========================================================
sub-action meaning
========== ==========================================================
0          pass (the slot is empty, fainted, or waits while its ally switches)
1-6        switch to the i-th Pokémon of ``battle.team`` (insertion order)
7-26       move slot ``k`` at target ``t``: ``7 + 5k + (t + 2)``, ``t`` in Showdown's
           -2/-1 (own side), 0 (no target: spread, self, field), 1/2 (foes)
27-...     the same 20 with each gimmick of the generation, in the order mega,
           z-move, dynamax, terastallize (gen 9: 27-46 terastallize)
========== ==========================================================

The joint action is ``first * S + second`` (``S`` = sub-actions a slot): gen 9 has 47 a
slot and 2,209 joint actions. A joint space rather than one sub-action per slot
(``MultiDiscrete``) keeps the mask exact: pairs that are each legal but not together (both
slots switching to the same Pokémon, two Terastallizations in one turn, pass + pass) are
masked out, every masked-in index maps to exactly one order the simulator accepts, and the
Discrete action space serves every learner and library unchanged. A policy can still score
it per slot (:mod:`mapleenv.doubles.head`: joint logits = first-slot + second-slot logits).

Legal pairs come from poke-env's reading of the request (``DoubleBattle.valid_orders``)
joined by ``DoubleBattleOrder.join_orders``; no decision pending: action 0 only.
"""

from __future__ import annotations

import functools
import logging

from poke_env.battle.double_battle import DoubleBattle
from poke_env.battle.move import Move
from poke_env.battle.pokemon import Pokemon
from poke_env.player.battle_order import (
    BattleOrder,
    DoubleBattleOrder,
    PassBattleOrder,
    SingleBattleOrder,
)

from mapleenv.actions.singles import NUM_MOVE_SLOTS, NUM_SWITCHES, slot_moves

logger = logging.getLogger(__name__)

NUM_TARGETS = 5  # Showdown targets -2..2
MOVE_BLOCK = NUM_MOVE_SLOTS * NUM_TARGETS
FIRST_MOVE = 1 + NUM_SWITCHES
_GIMMICKS_BY_GEN = {6: ("mega",), 7: ("mega", "z_move"), 8: ("mega", "z_move", "dynamax")}
_GEN9_GIMMICKS = ("terastallize",)


def gimmicks(gen: int) -> tuple[str, ...]:
    """The gimmick flags a generation's doubles orders can carry, in block order."""
    if gen >= 9:
        return _GEN9_GIMMICKS
    return _GIMMICKS_BY_GEN.get(gen, ())


@functools.cache
def slot_space_size(gen: int) -> int:
    """Sub-actions of one active slot (gen 9: 47)."""
    return FIRST_MOVE + MOVE_BLOCK * (1 + len(gimmicks(gen)))


@functools.cache
def action_space_size(gen: int) -> int:
    """Joint actions of both slots (gen 9: 2,209)."""
    return slot_space_size(gen) ** 2


def split(action: int, gen: int) -> tuple[int, int]:
    """The two slots' sub-actions of a joint action."""
    return divmod(int(action), slot_space_size(gen))


def join(first: int, second: int, gen: int) -> int:
    """The joint action of two sub-actions."""
    return int(first) * slot_space_size(gen) + int(second)


def move_slots(battle: DoubleBattle, pos: int) -> list[Move]:
    """The moves behind slot ``pos``'s move sub-actions, in slot order (as in singles:
    :func:`mapleenv.actions.singles.slot_moves`)."""
    return slot_moves(battle.active_pokemon[pos], battle.available_moves[pos])


def _sub_action(
    order: SingleBattleOrder, team_index: dict[int, int], slot_index: dict[str, int], gen: int
) -> int | None:
    """Slot sub-action of one slot's order; None when it has none."""
    if isinstance(order, PassBattleOrder):
        return 0
    target = order.order
    if isinstance(target, Pokemon):
        index = team_index.get(id(target))
        return None if index is None else 1 + index
    if not isinstance(target, Move):
        return None
    slot = slot_index.get(target.id)
    if slot is None or not -2 <= order.move_target <= 2:
        return None
    block = 0
    for k, flag in enumerate(gimmicks(gen), start=1):
        if getattr(order, flag):
            block = k
    if any(getattr(order, f) for f in ("mega", "z_move", "dynamax", "terastallize")) != (block > 0):
        return None  # a gimmick this generation's space has no block for
    return FIRST_MOVE + MOVE_BLOCK * block + NUM_TARGETS * slot + order.move_target + 2


def needs_decision(battle: DoubleBattle) -> bool:
    """Whether the battle waits for an order from this side."""
    return not battle.finished and not battle.wait and not battle.teampreview


def legal_actions(battle: DoubleBattle) -> dict[int, BattleOrder]:
    """Map each legal joint action to its order; empty when no decision is pending."""
    if not needs_decision(battle):
        return {}
    gen = battle.gen
    team_index = {id(mon): i for i, mon in enumerate(battle.team.values()) if i < NUM_SWITCHES}
    per_slot: list[dict[int, SingleBattleOrder]] = []
    for pos, orders in enumerate(battle.valid_orders):
        slot_index: dict[str, int] = {}
        for i, move in enumerate(move_slots(battle, pos)):
            slot_index.setdefault(move.id, i)
        subs: dict[int, SingleBattleOrder] = {}
        for order in orders:
            sub = _sub_action(order, team_index, slot_index, gen)
            if sub is None:
                logger.warning(
                    "%s: valid order %r of slot %d has no action; it cannot be chosen",
                    battle.battle_tag,
                    order.message,
                    pos,
                )
                continue
            subs.setdefault(sub, order)
        per_slot.append(subs)
    first, second = per_slot
    if not first or not second:
        return {}
    # one join_orders call for all pairs (not one a pair: it was a hot spot), each joined
    # order mapped back to its two sub-actions by the identity of its halves
    sub_of = [{id(o): a for a, o in subs.items()} for subs in per_slot]
    size = slot_space_size(gen)
    return {
        sub_of[0][id(joined.first_order)] * size + sub_of[1][id(joined.second_order)]: joined
        for joined in DoubleBattleOrder.join_orders(list(first.values()), list(second.values()))
    }
