"""Moves that surely fail this turn, and the action mask without them (``mask_futile``).

:func:`surely_fails` keeps the part of :func:`~mapleenv.encoders.features.futility.move_futility`
that is certain from what our side sees: the rule is that the move fails by the game's
rules in the state we see, unless the opponent spends its turn changing that state
(switching out, breaking our substitute, damaging us before Rest). What can change it
for free or by chance (the target terastallizing, waking up or thawing, a hidden ability,
item or speed, Protect's 1 in 3) makes a failure only likely: it stays a flag of the singles_sets
encoder and is never masked. The table per condition is in docs/observation.md, "Masking
futile moves". :func:`without_futile` drops the plain and Tera orders of such moves
from the legal actions, never all of them.
"""

from __future__ import annotations

from poke_env.battle import (
    AbstractBattle,
    DoubleBattle,
    Effect,
    Move,
    MoveCategory,
    Pokemon,
    SideCondition,
    Status,
    Target,
)
from poke_env.player.battle_order import BattleOrder, DoubleBattleOrder, SingleBattleOrder

from mapleenv.encoders.features.futility import (
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
from mapleenv.encoders.features.futility_history import STALLING, sleep_clause_blocks
from mapleenv.encoders.features.movetype import TYPE_CHANGING, VARIABLE_TYPE, move_type

# moves never judged: not in the move data (Recharge) or always usable (Struggle)
UNJUDGED = frozenset({"recharge", "struggle"})
# target effects that undo a type immunity or a levitation
IMMUNITY_UNDONE = frozenset(
    {Effect.FORESIGHT, Effect.MIRACLE_EYE, Effect.SMACK_DOWN, Effect.INGRAIN, Effect.ROOST}
)
# our abilities that ignore or suppress the target's
SUPPRESSORS = MOLD_BREAKERS | {"neutralizinggas"}
# doubles: moves that hit both foes (and, the last, our ally too), or a random foe
SPREAD_TARGETS = frozenset({Target.ALL_ADJACENT_FOES, Target.RANDOM_NORMAL, Target.ALL_ADJACENT})
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
    opp = battle.opponent_active_pokemon
    targets = [] if opp is None or opp.fainted else [opp]
    return fails_against(battle, battle.active_pokemon, move, targets)


def fails_against(
    battle: AbstractBattle, me: Pokemon | None, move: Move, targets: list[Pokemon]
) -> bool:
    """Whether ``me``'s ``move`` surely fails: by our own state, side or the field, or,
    for a move at the opposing side, against every one of ``targets`` (the Pokémon it
    would hit; none: judged by our own state alone)."""
    if me is None or move.id in UNJUDGED:
        return False
    try:
        m = move_data(battle.gen, move.id)
    except (KeyError, ValueError):  # poke-env: an unknown move, one without data
        return False
    if _user_fails(battle, me, m):
        return True
    if not targets or m.target not in FOE_TARGETS:
        return False
    return all(
        _target_fails(battle, me, opp, m) or _immune_fails(battle, me, opp, m) for opp in targets
    )


def _maskable(order: BattleOrder) -> Move | None:
    """The move of a plain or Tera move order (other gimmicks change the move: none)."""
    if not isinstance(order, SingleBattleOrder) or not isinstance(order.order, Move):
        return None
    return None if order.mega or order.z_move or order.dynamax else order.order


def without_futile(legal: dict[int, BattleOrder], battle: AbstractBattle) -> dict[int, BattleOrder]:
    """``legal`` (:func:`mapleenv.actions.legal_actions`) less the plain and Tera orders
    of moves that :func:`surely_fails`; ``legal`` itself when nothing would be left (the
    game must get a choice). A double battle's joint orders: :func:`without_futile_doubles`."""
    if isinstance(battle, DoubleBattle):
        return without_futile_doubles(legal, battle)
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


def doubles_targets(battle: DoubleBattle, pos: int, move: Move, target: int) -> list[Pokemon]:
    """The Pokémon slot ``pos``'s ``move`` at Showdown target ``target`` would hit, as far
    as it is judged: the chosen foe (1, 2), or the other one when the chosen slot is empty
    (Showdown retargets), both foes for a spread or random-foe move; none (our own state
    alone) for a move aimed at our side, or one that also hits an ally in place (it may
    terastallize this turn: its types are not settled)."""
    if move.target is Target.ALL_ADJACENT and battle.active_pokemon[1 - pos] is not None:
        return []
    if move.target in SPREAD_TARGETS:
        return [mon for mon in battle.opponent_active_pokemon if mon is not None]
    if target in (1, 2):
        foes = battle.opponent_active_pokemon
        chosen = foes[target - 1] or foes[2 - target]
        return [chosen] if chosen is not None else []
    return []


def without_futile_doubles(
    legal: dict[int, BattleOrder], battle: DoubleBattle
) -> dict[int, BattleOrder]:
    """The joint orders of ``legal`` less those where a slot plays a plain or Tera move
    that surely fails (:func:`fails_against` the Pokémon it would hit). A slot whose every
    order would go keeps them all; ``legal`` itself when nothing would be left."""
    actives = battle.active_pokemon
    judged: dict[tuple[int, str, int], bool] = {}
    options: list[dict[int, SingleBattleOrder]] = [{}, {}]  # per slot: id(order) -> order
    for joined in legal.values():
        assert isinstance(joined, DoubleBattleOrder)
        for pos, half in enumerate((joined.first_order, joined.second_order)):
            if isinstance(half, SingleBattleOrder):
                options[pos][id(half)] = half
    futile: list[set[int]] = [set(), set()]
    for pos, orders in enumerate(options):
        for key, order in orders.items():
            move = _maskable(order)
            if move is None:
                continue
            target = int(order.move_target)
            if (pos, move.id, target) not in judged:
                targets = doubles_targets(battle, pos, move, target)
                judged[pos, move.id, target] = fails_against(battle, actives[pos], move, targets)
            if judged[pos, move.id, target]:
                futile[pos].add(key)
        if len(futile[pos]) == len(orders):  # nothing of this slot's would be left
            futile[pos] = set()
    kept = {
        action: joined
        for action, joined in legal.items()
        if id(joined.first_order) not in futile[0] and id(joined.second_order) not in futile[1]
    }
    return kept or legal
