"""Would our move fail or do nothing right now? Pure functions of a poke-env battle.

The singles_sets encoder's ``move_futility`` block (docs/observation.md). Move data (category,
target, flags, healing, status, side conditions, weather, terrain, boosts, immunity
rules) comes from poke-env's ``Move``, type matchups from its type chart; what poke-env
does not know (which abilities block which moves, which statuses a type is immune to)
is the small tables below; conditions that depend on earlier turns (Sleep Clause, Encore,
Protect twice in a row) are in :mod:`~mapleenv.encoders.features.futility_history`. Everything
is judged from what our side can see: an opponent's unknown ability is a risk
(:attr:`Futility.ability_risk`), not a certainty.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from poke_env.battle import (
    AbstractBattle,
    Effect,
    Field,
    Move,
    MoveCategory,
    Pokemon,
    PokemonType,
    SideCondition,
    Status,
    Target,
    Weather,
)
from poke_env.battle.side_condition import STACKABLE_CONDITIONS

from mapleenv.encoders.features import dex
from mapleenv.encoders.features.futility_history import (
    encore_fails,
    stalling_risky,
    status_prevented,
)
from mapleenv.encoders.features.movetype import move_type

T = PokemonType
NEEDS_SLEEP = frozenset({"sleeptalk", "snore"})
FIRST_TURN_ONLY = frozenset({"fakeout", "firstimpression", "matblock"})
NEEDS_TARGET_ATTACK = frozenset({"suckerpunch", "thunderclap"})
# moves that act on the opposing Pokémon (not a side, the field or the user)
FOE_TARGETS = frozenset(
    {
        Target.NORMAL,
        Target.ANY,
        Target.ADJACENT_FOE,
        Target.ALL_ADJACENT_FOES,
        Target.ALL_ADJACENT,
        Target.RANDOM_NORMAL,
    }
)
# the game's status immunities by type (Corrosion aside)
STATUS_IMMUNE_TYPES: dict[Status, frozenset[PokemonType]] = {
    Status.PAR: frozenset({T.ELECTRIC}),
    Status.BRN: frozenset({T.FIRE}),
    Status.PSN: frozenset({T.POISON, T.STEEL}),
    Status.TOX: frozenset({T.POISON, T.STEEL}),
    Status.FRZ: frozenset({T.ICE}),
}
# abilities that make their holder immune to a move type (absorbing or levitating)
TYPE_ABILITIES: dict[str, PokemonType] = {
    "levitate": T.GROUND,
    "eartheater": T.GROUND,
    "flashfire": T.FIRE,
    "wellbakedbody": T.FIRE,
    "waterabsorb": T.WATER,
    "stormdrain": T.WATER,
    "dryskin": T.WATER,
    "voltabsorb": T.ELECTRIC,
    "lightningrod": T.ELECTRIC,
    "motordrive": T.ELECTRIC,
    "sapsipper": T.GRASS,
}
# abilities that block moves with a flag
FLAG_ABILITIES = {
    "soundproof": "sound",
    "bulletproof": "bullet",
    "overcoat": "powder",
    "windrider": "wind",
}
# abilities that block some non-volatile statuses (None: all of them)
STATUS_ABILITIES: dict[str, frozenset[Status] | None] = {
    "limber": frozenset({Status.PAR}),
    "insomnia": frozenset({Status.SLP}),
    "vitalspirit": frozenset({Status.SLP}),
    "sweetveil": frozenset({Status.SLP}),
    "immunity": frozenset({Status.PSN, Status.TOX}),
    "pastelveil": frozenset({Status.PSN, Status.TOX}),
    "waterveil": frozenset({Status.BRN}),
    "waterbubble": frozenset({Status.BRN}),
    "thermalexchange": frozenset({Status.BRN}),
    "magmaarmor": frozenset({Status.FRZ}),
    "purifyingsalt": None,
    "comatose": None,
}
PRIORITY_BLOCKERS = frozenset({"dazzling", "queenlymajesty", "armortail"})
MOLD_BREAKERS = frozenset({"moldbreaker", "teravolt", "turboblaze"})
SLEEP_PROOF = frozenset({"insomnia", "vitalspirit", "sweetveil", "purifyingsalt", "comatose"})


# healing moves that do more than heal the user now (Rest is judged apart)
NOT_PLAIN_HEAL = frozenset({"healingwish", "lunardance", "revivalblessing", "rest", "swallow"})


def is_self_heal(m: Move | MoveData) -> bool:
    """Whether ``m`` is a status move that heals the user (Recover, Synthesis, Wish...)."""
    return (
        "heal" in m.flags
        and m.category is MoveCategory.STATUS
        and m.target in (Target.SELF, Target.ALLIES)
        and m.id not in NOT_PLAIN_HEAL
    )


@dataclass(frozen=True)
class MoveData:
    """What the checks read of a move, under ``Move``'s attribute names, read once per move
    id (poke-env's ``Move`` parses its entry on every attribute access)."""

    id: str
    category: MoveCategory
    target: Target | None
    flags: frozenset[str]
    priority: int
    type: PokemonType
    status: Status | None
    volatile_status: Effect | None
    side_condition: SideCondition | None
    weather: Weather | None
    terrain: Field | None
    self_switch: Any
    boosts: dict[str, int] | None
    ignore_immunity: bool | set[PokemonType]
    checks_immunity: bool  # a status move that still obeys type immunities (Thunder Wave)
    self_heal: bool


@cache
def move_data(gen: int, move_id: str) -> MoveData:
    """:class:`MoveData` of ``move_id`` in generation ``gen``."""
    m = dex.move(gen, move_id)
    return MoveData(
        id=m.id,
        category=m.category,
        target=m.target,
        flags=frozenset(m.flags),
        priority=m.priority,
        type=m.type,
        status=m.status,
        volatile_status=m.volatile_status,
        side_condition=m.side_condition,
        weather=m.weather,
        terrain=m.terrain,
        self_switch=m.self_switch,
        boosts=m.boosts,
        ignore_immunity=m.ignore_immunity,
        checks_immunity=m.entry.get("ignoreImmunity") is False,
        self_heal=is_self_heal(m),
    )


@dataclass(frozen=True)
class Futility:
    """Why a move would fail now (see the ``move_futility`` block in docs/observation.md)."""

    user_state: bool = False
    target_state: bool = False
    type_immune: bool = False
    ability_immune: bool = False
    ability_risk: float = 0.0
    needs_target_attack: bool = False

    @property
    def futile(self) -> bool:
        return self.user_state or self.target_state or self.type_immune or self.ability_immune

    def vector(self) -> list[float]:
        """The block's floats, in the layout's order."""
        return [
            float(self.futile),
            float(self.user_state),
            float(self.target_state),
            float(self.type_immune),
            float(self.ability_immune),
            self.ability_risk,
            float(self.needs_target_attack),
        ]


def current_types(mon: Pokemon) -> tuple[PokemonType, ...]:
    """Defensive types now: Tera type once terastallized (Stellar keeps the base types)."""
    if mon.is_terastallized and mon.tera_type is PokemonType.STELLAR:
        return tuple(mon.base_types)
    return tuple(mon.types)


def _full_hp(mon: Pokemon) -> bool:
    return mon.max_hp > 0 and mon.current_hp >= mon.max_hp


def _hp_at_most(mon: Pokemon, fraction: float) -> bool:
    return mon.max_hp > 0 and mon.current_hp <= mon.max_hp * fraction


def _self_boosts_maxed(me: Pokemon, m: MoveData) -> bool:
    if m.category is not MoveCategory.STATUS or m.target is not Target.SELF:
        return False
    ups = [stat for stat, n in (m.boosts or {}).items() if n > 0]
    if m.id == "bellydrum":
        return _hp_at_most(me, 0.5) or me.boosts.get("atk", 0) >= 6
    return bool(ups) and all(me.boosts.get(stat, 0) >= 6 for stat in ups)


def effective_priority(me: Pokemon, m: MoveData) -> int:
    """``m``'s priority once our ability changes it (Prankster, Gale Wings, Triage)."""
    ability = me.ability
    if ability == "prankster" and m.category is MoveCategory.STATUS:
        return m.priority + 1
    if ability == "galewings" and m.type is T.FLYING and _full_hp(me):
        return m.priority + 1
    if ability == "triage" and "heal" in m.flags:
        return m.priority + 3
    return m.priority


def user_state_futile(battle: AbstractBattle, me: Pokemon, m: MoveData) -> bool:
    """Whether our own Pokémon, side or the field makes ``m`` fail (a Protect-like move
    right after a successful one counts: it fails 2 times in 3)."""
    move_id = m.id
    if stalling_risky(me, move_id):
        return True
    if move_id in NEEDS_SLEEP:
        return me.status is not Status.SLP and me.ability != "comatose"
    if move_id == "substitute":
        return Effect.SUBSTITUTE in me.effects or _hp_at_most(me, 0.25)
    if move_id == "shedtail":
        return _hp_at_most(me, 0.5)
    if move_id in FIRST_TURN_ONLY:
        return not me.first_turn
    if move_id == "rest":
        return _full_hp(me) or me.status is Status.SLP or me.ability in SLEEP_PROOF
    if m.self_heal:
        return _full_hp(me)
    side = m.side_condition
    if side is not None:
        if m.target is Target.FOE_SIDE:  # poke-env counts layers of stackable ones only
            conditions = battle.opponent_side_conditions
            if side not in STACKABLE_CONDITIONS:
                return side in conditions
            return conditions.get(side, 0) >= STACKABLE_CONDITIONS[side]
        if side is SideCondition.AURORA_VEIL and not (
            {Weather.HAIL, Weather.SNOWSCAPE} & set(battle.weather)
        ):
            return True
        return side in battle.side_conditions
    if not m.self_switch:  # Chilly Reception still switches out under snow
        if m.weather is not None and m.weather in battle.weather:
            return True
        if m.terrain is not None and m.terrain in battle.fields:
            return True
    return _self_boosts_maxed(me, m)


def _held_down(battle: AbstractBattle, mon: Pokemon) -> bool:
    """Grounded whatever its types, item or ability (Gravity, Iron Ball, Smack Down...)."""
    if Field.GRAVITY in battle.fields or mon.item == "ironball":
        return True
    return Effect.SMACK_DOWN in mon.effects or Effect.INGRAIN in mon.effects


def _grounded(battle: AbstractBattle, mon: Pokemon) -> bool:
    """Grounded as far as types, item and effects say (abilities are judged apart)."""
    if _held_down(battle, mon):
        return True
    if mon.item == "airballoon" or Effect.MAGNET_RISE in mon.effects:
        return False
    return T.FLYING not in current_types(mon)


def terrain_grounded(
    battle: AbstractBattle, me: Pokemon, opp: Pokemon, abilities: Sequence[str]
) -> bool:
    """Whether terrain surely touches ``opp``: :func:`_grounded`, and no Levitate that our
    move cannot ignore (known, or among its candidate ``abilities`` while unknown)."""
    if not _grounded(battle, opp):
        return False
    if _held_down(battle, opp) or me.ability in MOLD_BREAKERS or Effect.GASTRO_ACID in opp.effects:
        return True
    return "levitate" not in ((opp.ability,) if opp.ability else abilities)


def shielded(me: Pokemon, opp: Pokemon, m: MoveData) -> bool:
    """Whether the target's substitute or Safety Goggles (against powder) stop a status
    move ``m``."""
    if "powder" in m.flags and opp.item == "safetygoggles":
        return True
    return (
        Effect.SUBSTITUTE in opp.effects
        and "bypasssub" not in m.flags
        and "sound" not in m.flags
        and me.ability != "infiltrator"
    )


def target_state_futile(
    battle: AbstractBattle, me: Pokemon, opp: Pokemon, m: MoveData, abilities: Sequence[str] = ()
) -> bool:
    """Whether the target's state, side or terrain makes ``m`` fail (abilities apart but
    Levitate: ``abilities`` are the target's candidates while its ability is unknown)."""
    priority = effective_priority(me, m)
    grounded = terrain_grounded(battle, me, opp, abilities)
    if priority > 0 and Field.PSYCHIC_TERRAIN in battle.fields and grounded:
        return True
    if m.category is not MoveCategory.STATUS:
        return False
    if m.id == "strengthsap" and opp.boosts.get("atk", 0) <= -6:
        return True
    if m.id == "encore" and encore_fails(battle, me, opp, priority):
        return True
    if shielded(me, opp, m):
        return True
    volatile = m.volatile_status
    if volatile is not None and volatile in opp.effects:
        return True
    status = m.status
    if status is None and volatile is not Effect.YAWN:
        return False
    if opp.status is not None or status_prevented(m.category, status, battle):
        return True
    protected = SideCondition.SAFEGUARD in battle.opponent_side_conditions
    if protected and me.ability != "infiltrator":
        return True
    if grounded and Field.MISTY_TERRAIN in battle.fields:
        return True
    if status is Status.SLP and grounded and Field.ELECTRIC_TERRAIN in battle.fields:
        return True
    immune = STATUS_IMMUNE_TYPES.get(status) if status is not None else None
    if immune and not immune.isdisjoint(current_types(opp)):
        return not (status in (Status.PSN, Status.TOX) and me.ability == "corrosion")
    return False


def type_immune(battle: AbstractBattle, me: Pokemon, opp: Pokemon, m: MoveData) -> bool:
    """Whether the target's current types (or Air Balloon) make ``m`` do nothing, judged
    by the type ``m`` has when used (:func:`~mapleenv.encoders.features.movetype.move_type`;
    never when that type cannot be known)."""
    types = current_types(opp)
    if m.id == "leechseed" or "powder" in m.flags:
        return T.GRASS in types
    if T.DARK in types and me.ability == "prankster" and m.category is MoveCategory.STATUS:
        return True  # gen 7+: Dark types are immune to Prankster-boosted moves
    if m.category is MoveCategory.STATUS and not m.checks_immunity:
        return False  # status moves ignore type immunities unless the data says not
    used = move_type(battle, me, m)
    ignored = m.ignore_immunity
    if used is None or ignored is True or (isinstance(ignored, set) and used in ignored):
        return False
    if used is T.GROUND:
        if not _grounded(battle, opp):
            return True
        types = tuple(t for t in types if t is not T.FLYING)  # Gravity, Iron Ball
    if used in (T.NORMAL, T.FIGHTING) and me.ability in ("scrappy", "mindseye"):
        types = tuple(t for t in types if t is not T.GHOST)
    return dex.effectiveness(battle.gen, used, types) == 0


def ability_blocks(
    ability: str,
    battle: AbstractBattle,
    opp: Pokemon,
    m: MoveData,
    priority: int,
    used: PokemonType | None,
) -> bool:
    """Whether the target's ``ability`` (an id) blocks ``m`` used at ``priority`` with
    type ``used`` (None: unknown, type-reading abilities do not count)."""
    typed = TYPE_ABILITIES.get(ability)
    if typed is not None and used is typed:
        return True
    flag = FLAG_ABILITIES.get(ability)
    if flag is not None and flag in m.flags:
        return True
    if ability in PRIORITY_BLOCKERS and priority > 0:
        return True
    if m.category is MoveCategory.STATUS:
        if ability == "goodasgold" or (ability == "magicbounce" and "reflectable" in m.flags):
            return True
        if m.status is not None and ability in STATUS_ABILITIES:
            statuses = STATUS_ABILITIES[ability]
            return statuses is None or m.status in statuses
        return False
    if ability == "wonderguard" and used is not None:
        return dex.effectiveness(battle.gen, used, current_types(opp)) <= 1
    return False


def move_futility(
    battle: AbstractBattle,
    move: Move,
    candidate_abilities: Sequence[str] | None = None,
) -> Futility:
    """Why ``move`` of our active Pokémon would fail against the opposing active now.

    ``candidate_abilities``: the target's possible abilities while unknown (e.g. from its
    random-battle sets); default: poke-env's ``possible_abilities``.
    """
    me = battle.active_pokemon
    if me is None:
        return Futility()
    m = move_data(battle.gen, move.id)
    user = user_state_futile(battle, me, m)
    opp = battle.opponent_active_pokemon
    needs_attack = m.id in NEEDS_TARGET_ATTACK
    if opp is None or opp.fainted or m.target not in FOE_TARGETS:
        return Futility(user_state=user, needs_target_attack=needs_attack)
    immune = False
    risk = 0.0
    priority = effective_priority(me, m)
    used = move_type(battle, me, m)
    abilities = [] if opp.ability else list(candidate_abilities or opp.possible_abilities or ())
    if me.ability not in MOLD_BREAKERS:
        if opp.ability:
            immune = ability_blocks(opp.ability, battle, opp, m, priority, used)
            risk = float(immune)
        elif abilities:
            blocked = sum(ability_blocks(a, battle, opp, m, priority, used) for a in abilities)
            risk = blocked / len(abilities)
    return Futility(
        user_state=user,
        target_state=target_state_futile(battle, me, opp, m, abilities),
        type_immune=type_immune(battle, me, opp, m),
        ability_immune=immune,
        ability_risk=risk,
        needs_target_attack=needs_attack,
    )
