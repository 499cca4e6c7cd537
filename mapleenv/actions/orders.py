"""Orders as sent to the simulator: switches by request slot, the team-preview choice."""

from __future__ import annotations

from poke_env.battle.abstract_battle import AbstractBattle
from poke_env.battle.pokemon import Pokemon
from poke_env.player.battle_order import BattleOrder, DoubleBattleOrder, SingleBattleOrder


def switch_slot(order: BattleOrder | str, battle: AbstractBattle) -> int | None:
    """The 1-based position of a switch order's Pokémon in ``battle``'s last request (None
    for other orders). Switches are sent by slot: the simulator matches ``switch <name>``
    against species too, so a name could mean a transformed active Pokémon (poke-env#880)."""
    mon = getattr(order, "order", None)
    if not isinstance(mon, Pokemon):
        return None
    side = (battle.last_request or {}).get("side") or {}
    for slot, entry in enumerate(side.get("pokemon") or (), start=1):
        if entry.get("ident", "").partition(": ")[2] == mon.name:
            return slot
    return None


def by_slot(order: BattleOrder, battle: AbstractBattle) -> BattleOrder:
    """``order`` to send to a server: a switch as ``/choose switch <slot>``
    (:func:`switch_slot`; in doubles, each slot's switch), anything else unchanged."""
    if isinstance(order, DoubleBattleOrder):
        first = by_slot(order.first_order, battle)
        second = by_slot(order.second_order, battle)
        if first is order.first_order and second is order.second_order:
            return order
        return SingleBattleOrder(f"{first.message}, {second.message.removeprefix('/choose ')}")
    slot = switch_slot(order, battle)
    return order if slot is None else SingleBattleOrder(f"/choose switch {slot}")


def teampreview_in_order(battle: AbstractBattle) -> str:
    """The team-preview choice of a Maple policy (the agent, frozen policy opponents): the
    team in its given order, so the team file sets the lead (and, where fewer are brought,
    as in VGC's four of six, the first ones are); not a policy decision."""
    for mon in battle.team.values():
        mon._selected_in_teampreview = True  # as poke-env asks of a teampreview choice
    return "/team " + "".join(str(i) for i in range(1, len(battle.team) + 1))
