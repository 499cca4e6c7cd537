"""Moves that surely fail this turn, and the action mask without them (``mask_futile``).

:func:`surely_fails` keeps the part of :func:`~mapleenv.encoders.rich.futility.move_futility`
that is certain from what our side sees: the rule is that the move fails by the game's
rules in the state we see, unless the opponent spends its turn changing that state
(switching out, breaking our substitute, damaging us before Rest). What can change it
for free or by chance (the target terastallizing, waking up or thawing, a hidden ability,
item or speed, Protect's 1 in 3) makes a failure only likely: it stays a flag of the rich2
encoder and is never masked. The table per condition is in docs/observation.md, "Masking
futile moves". :func:`without_futile` drops the plain and Tera orders of such moves
from the legal actions, never all of them.
"""

from __future__ import annotations

from poke_env.battle import (
    AbstractBattle,
    Effect,
    Move,
    MoveCategory,
    Pokemon,
    SideCondition,
    Status,
)
from poke_env.player.battle_order import BattleOrder, SingleBattleOrder

from mapleenv.encoders.rich.futility import (
    FOE_TARGETS,
    MOLD_BREAKERS,
    STATUS_IMMUNE_TYPES,
    TYPE_ABILITIES,
    MoveData,
    ability_blocks,
    current_types,
    effective_priority,
    move_data,
    shielded,
    type_immune,
    user_state_futile,
)
from mapleenv.encoders.rich.futility_history import STALLING, sleep_clause_blocks
from mapleenv.encoders.rich.movetype import TYPE_CHANGING, VARIABLE_TYPE, move_type

# moves never judged: not in the move data (Recharge) or always usable (Struggle)
UNJUDGED = frozenset({"recharge", "struggle"})
# target effects that undo a type immunity or a levitation
IMMUNITY_UNDONE = frozenset(
    {Effect.FORESIGHT, Effect.MIRACLE_EYE, Effect.SMACK_DOWN, Effect.INGRAIN, Effect.ROOST}
)
# our abilities that ignore or suppress the target's
SUPPRESSORS = MOLD_BREAKERS | {"neutralizinggas"}
# target statuses that last through its own move (sleep and freeze may end there)
LASTING_STATUS = frozenset({Status.PAR, Status.BRN, Status.PSN, Status.TOX})


def types_settled(battle: AbstractBattle, opp: Pokemon) -> bool:
    """Whether the opposing active's types cannot change before our move: it has
    terastallized, or its side cannot (used its Tera, a generation or format without)."""
    if opp.is_terastallized or battle.opponent_used_tera or battle.gen < 9:
        return True
    return any(rule.startswith("Terastal Clause") for rule in battle.rules)


def _user_fails(battle: AbstractBattle, me: Pokemon, m: MoveData) -> bool:
    """:func:`user_state_futile` less its likely parts: Protect twice (1 in 3) and
    Substitute with one up (a faster foe may break it first: the slow re-sub)."""
    if m.id in STALLING:
        return False
    if m.id == "substitute":
        return me.max_hp > 0 and me.current_hp <= me.max_hp / 4
    return user_state_futile(battle, me, m)


def _target_fails(battle: AbstractBattle, me: Pokemon, opp: Pokemon, m: MoveData) -> bool:
    """The certain part of ``target_state_futile``: a status move into a substitute,
    Safety Goggles vs powder, a lasting volatile or status, Sleep Clause, Safeguard, a
    status-immune type once the types are settled, Strength Sap at -6 Attack."""
    if m.category is not MoveCategory.STATUS:
        return False
    if m.id == "strengthsap" and opp.boosts.get("atk", 0) <= -6:
        return True
    if shielded(me, opp, m):
        return True
    volatile = m.volatile_status
    if volatile is not None and volatile is not Effect.CONFUSION and volatile in opp.effects:
        return True  # confusion may end at the target's own move
    status = m.status
    if status is None and volatile is not Effect.YAWN:
        return False
    if opp.status in LASTING_STATUS:
        return True
    if status is Status.SLP and sleep_clause_blocks(battle, skip=opp):
        return True  # a benched sleeper: the target itself may wake before our move
    if SideCondition.SAFEGUARD in battle.opponent_side_conditions and me.ability != "infiltrator":
        return True
    immune = STATUS_IMMUNE_TYPES.get(status) if status is not None else None
    if immune and types_settled(battle, opp) and not immune.isdisjoint(current_types(opp)):
        return not (status in (Status.PSN, Status.TOX) and me.ability == "corrosion")
    return False


def _fixed_type(me: Pokemon, m: MoveData) -> bool:
    """Whether ``m`` surely has its data's type when we use it."""
    return m.id not in VARIABLE_TYPE and me.ability not in TYPE_CHANGING


def _immune_fails(battle: AbstractBattle, me: Pokemon, opp: Pokemon, m: MoveData) -> bool:
    """A type immunity (settled types, a fixed move type, nothing that undoes it) or a
    revealed ability that blocks the move (no Mold Breaker of ours)."""
    typed = _fixed_type(me, m)
    if (
        typed
        and types_settled(battle, opp)
        and not IMMUNITY_UNDONE.intersection(opp.effects)
        and type_immune(battle, me, opp, m)
    ):
        return True
    if not opp.ability or me.ability in SUPPRESSORS or Effect.GASTRO_ACID in opp.effects:
        return False
    reads_type = opp.ability in TYPE_ABILITIES or opp.ability == "wonderguard"
    if reads_type and not typed:
        return False
    if opp.ability == "wonderguard" and not types_settled(battle, opp):
        return False
    priority = effective_priority(me, m)
    return ability_blocks(opp.ability, battle, opp, m, priority, move_type(battle, me, m))


def surely_fails(battle: AbstractBattle, move: Move) -> bool:
    """Whether ``move`` of our active Pokémon surely fails against the opposing active
    this turn (see the module docs; never for a move the data does not know)."""
    me = battle.active_pokemon
    if me is None or move.id in UNJUDGED:
        return False
    try:
        m = move_data(battle.gen, move.id)
    except (KeyError, ValueError):  # poke-env: an unknown move, one without data
        return False
    if _user_fails(battle, me, m):
        return True
    opp = battle.opponent_active_pokemon
    if opp is None or opp.fainted or m.target not in FOE_TARGETS:
        return False
    return _target_fails(battle, me, opp, m) or _immune_fails(battle, me, opp, m)


def _maskable(order: BattleOrder) -> Move | None:
    """The move of a plain or Tera move order (other gimmicks change the move: none)."""
    if not isinstance(order, SingleBattleOrder) or not isinstance(order.order, Move):
        return None
    return None if order.mega or order.z_move or order.dynamax else order.order


def without_futile(legal: dict[int, BattleOrder], battle: AbstractBattle) -> dict[int, BattleOrder]:
    """``legal`` (:func:`mapleenv.actions.legal_actions`) less the plain and Tera orders
    of moves that :func:`surely_fails`; ``legal`` itself when nothing would be left (the
    game must get a choice)."""
    judged: dict[str, bool] = {}
    kept: dict[int, BattleOrder] = {}
    for action, order in legal.items():
        move = _maskable(order)
        if move is not None:
            if move.id not in judged:
                judged[move.id] = surely_fails(battle, move)
            if judged[move.id]:
                continue
        kept[action] = order
    return kept or legal
