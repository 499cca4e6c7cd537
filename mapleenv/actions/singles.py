"""Discrete actions for singles battles, in poke-env's ``SinglesEnv`` numbering.

====== =================================================
action meaning
====== =================================================
0-5    switch to the i-th Pokémon of ``battle.team`` (insertion order)
6-9    use move slot 0-3
10-13  move slot 0-3 + mega evolve
14-17  move slot 0-3 + z-move
18-21  move slot 0-3 + dynamax
22-25  move slot 0-3 + terastallize
====== =================================================

The action space is cut to the gimmicks of the generation (gen 9: 26 actions).

Legal actions are derived from ``battle.valid_orders`` (poke-env's reading of the
server's request), so the mask is exact: a masked-in action maps to exactly one valid
order and every valid order has an action. This fixes ``SinglesEnv.get_action_mask``
offering moves during a forced switch (U-turn, Volt Switch, Eject Button...) and
masking out moves a transformed Pokémon copied. Move slots follow ``SinglesEnv``: the
first four known moves of the active Pokémon, or, when the request offers a move that
is not among them (Struggle, Recharge, Transform), the request's own move list.

Team preview (formats with fixed teams) is not an action: a Maple policy keeps its team's
order (:func:`mapleenv.actions.orders.teampreview_in_order`), so the first Pokémon of a
team file leads.
"""

from __future__ import annotations

import functools
import logging

from poke_env.battle.battle import Battle
from poke_env.battle.move import Move
from poke_env.battle.pokemon import Pokemon
from poke_env.environment.singles_env import SinglesEnv
from poke_env.player.battle_order import BattleOrder, DefaultBattleOrder, SingleBattleOrder

logger = logging.getLogger(__name__)

NUM_SWITCHES = 6
NUM_MOVE_SLOTS = 4
# Offset of each gimmick's block of four actions, relative to the plain-move block.
_GIMMICK_OFFSET = {"mega": 4, "z_move": 8, "dynamax": 12, "terastallize": 16}


@functools.cache  # asked on every step by legal_actions
def action_space_size(gen: int) -> int:
    """Number of actions for a generation (``SinglesEnv.get_action_space_size``)."""
    return SinglesEnv.get_action_space_size(gen)


def move_slots(battle: Battle) -> list[Move]:
    """The moves behind actions 6-9, in slot order (fewer than four when unknown)."""
    return slot_moves(battle.active_pokemon, battle.available_moves)


def slot_moves(active: Pokemon | None, available: list[Move]) -> list[Move]:
    """An active Pokémon's move slots: its first four known moves, or the request's own
    list (``available``) when that offers a move not among them (Struggle, Recharge, a
    Transform's copies). Singles and each doubles slot number their moves this way."""
    if active is None:
        return list(available[:NUM_MOVE_SLOTS])
    known = list(active.moves.values())[:NUM_MOVE_SLOTS]
    known_ids = {move.id for move in known}
    if all(move.id in known_ids for move in available):
        return known
    return list(available[:NUM_MOVE_SLOTS])


def needs_decision(battle: Battle) -> bool:
    """Whether the battle waits for an order from this side."""
    return not battle.finished and not battle.wait and not battle.teampreview


def _action_of(
    order: SingleBattleOrder, team_index: dict[int, int], slot_index: dict[str, int]
) -> int | None:
    target = order.order
    if isinstance(target, Move):
        slot = slot_index.get(target.id)
        if slot is None:
            return None
        # the last gimmick flag set wins, in _GIMMICK_OFFSET's order
        if order.terastallize:
            offset = _GIMMICK_OFFSET["terastallize"]
        elif order.dynamax:
            offset = _GIMMICK_OFFSET["dynamax"]
        elif order.z_move:
            offset = _GIMMICK_OFFSET["z_move"]
        elif order.mega:
            offset = _GIMMICK_OFFSET["mega"]
        else:
            offset = 0
        return NUM_SWITCHES + slot + offset
    if isinstance(target, Pokemon):
        return team_index.get(id(target))
    return None


def legal_actions(battle: Battle) -> dict[int, BattleOrder]:
    """Map each legal action to its order; empty when no decision is pending."""
    if not needs_decision(battle):
        return {}
    team_index = {id(mon): i for i, mon in enumerate(battle.team.values()) if i < NUM_SWITCHES}
    slot_index: dict[str, int] = {}
    for i, move in enumerate(move_slots(battle)):
        slot_index.setdefault(move.id, i)
    size = action_space_size(battle.gen)
    actions: dict[int, BattleOrder] = {}
    for order in battle.valid_orders:
        if isinstance(order, DefaultBattleOrder):
            continue
        action = _action_of(order, team_index, slot_index)
        if action is None or action >= size:
            logger.warning(
                "%s: valid order %r has no action; it cannot be chosen",
                battle.battle_tag,
                order.message,
            )
            continue
        actions.setdefault(action, order)
    return actions
