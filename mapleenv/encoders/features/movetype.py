"""The type our move has when it hits, where our side can know it before choosing.

The move data's type is not always the type used: our ability may change it (the -ate
abilities, Normalize, Liquid Voice: Showdown's ``onModifyType`` in data/abilities.ts) and
some moves set their type in battle (Tera Blast, Weather Ball, Ivy Cudgel...). Type
immunities (and type-reading abilities) must be judged by the type used, or not at all.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

from poke_env.battle import AbstractBattle, Pokemon, PokemonType

T = PokemonType


class TypedMove(Protocol):
    """What is read of a move (:class:`~mapleenv.encoders.features.futility.MoveData`)."""

    @property
    def id(self) -> str: ...
    @property
    def type(self) -> PokemonType: ...
    @property
    def flags(self) -> Collection[str]: ...


# moves whose type is set in battle (by item, form, weather, terrain, Tera...)
VARIABLE_TYPE = frozenset(
    {
        "terablast",
        "terastarstorm",
        "weatherball",
        "terrainpulse",
        "judgment",
        "multiattack",
        "revelationdance",
        "ivycudgel",
        "technoblast",
        "ragingbull",
        "aurawheel",
        "naturalgift",
        "naturepower",
        "hiddenpower",
    }
)
# our abilities that turn our Normal moves into another type
ATE_ABILITIES = {
    "aerilate": T.FLYING,
    "pixilate": T.FAIRY,
    "refrigerate": T.ICE,
    "galvanize": T.ELECTRIC,
}
# our abilities that change our moves' types
TYPE_CHANGING = frozenset({*ATE_ABILITIES, "normalize", "liquidvoice"})


def _changed_by_ability(ability: str | None, m: TypedMove, base: PokemonType) -> PokemonType:
    """``base`` once our ``ability`` changes it (Tera Blast of a terastallized user and
    the moves in :data:`VARIABLE_TYPE` aside: the caller keeps those out)."""
    if ability in ATE_ABILITIES and base is T.NORMAL:
        return ATE_ABILITIES[ability]
    if ability == "normalize":
        return T.NORMAL
    if ability == "liquidvoice" and "sound" in m.flags:
        return T.WATER
    return base


def move_type(battle: AbstractBattle, me: Pokemon, m: TypedMove) -> PokemonType | None:
    """The type ``m`` has when ``me`` uses it now; None when it cannot be known from here
    (a variable-type move, Tera Blast while the Tera order is still open, Stellar)."""
    if m.id == "terablast":
        if me.is_terastallized:
            tera = me.tera_type
            return None if tera is None or tera is T.STELLAR else tera
        if battle.can_tera:
            return None  # plain and Tera orders share the move's flags
        return _changed_by_ability(me.ability, m, m.type)
    if m.id in VARIABLE_TYPE:
        return None
    return _changed_by_ability(me.ability, m, m.type)
