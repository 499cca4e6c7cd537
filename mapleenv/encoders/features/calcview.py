"""Read-once views of the poke-env objects ``poke_env.calc.calculate_damage`` reads.

One calculator call reads the same properties of the move, the battle and both Pokémon
dozens of times (``Pokemon.ability`` ~95 times, ``Battle.all_active_pokemons`` ~10, each
``Move`` property a GenData look-up and parse). Nothing changes during a call, so these
views compute each property once and hand the same value back; the calculator's result
is the same (``tests/mapleenv/encoders/test_entity_caches.py`` compares both paths).
"""

from __future__ import annotations

from typing import Any

from poke_env.battle import AbstractBattle, Move, Pokemon

# ``Move`` properties poke_env.calc reads, each a function of the move's id, generation,
# Hidden Power override and request target only.
CALC_MOVE_PROPERTIES = (
    "entry",
    "type",
    "category",
    "flags",
    "priority",
    "n_hit",
    "base_power",
    "target",
    "secondary",
    "recoil",
    "ignore_defensive",
    "breaks_protect",
)


def _memoised(name: str) -> property:
    compute = getattr(Move, name).fget

    def fget(self: CalcMove) -> Any:
        memo = self._memo
        if name in memo:
            return memo[name]
        value = memo[name] = compute(self)
        return value

    return property(fget, doc=f"``Move.{name}``, computed once.")


class CalcMove(Move):
    """A copy of a plain ``Move`` whose data properties are computed once (lazily, so
    errors surface as they would on the original)."""

    __slots__ = ("_memo",)

    def __init__(self, m: Move) -> None:  # no Move.__init__: the slots are copied
        for slot in Move.__slots__:
            setattr(self, slot, getattr(m, slot))
        self._dynamaxed_move = None
        self._memo: dict[str, Any] = {}


for _name in CALC_MOVE_PROPERTIES:
    setattr(CalcMove, _name, _memoised(_name))

_calc_moves: dict[tuple[Any, ...], Move] = {}


def calc_move(m: Move) -> Move:
    """A shared :class:`CalcMove` for a plain ``Move`` (other kinds pass through)."""
    if type(m) is not Move:
        return m
    key = (m._id, m._gen, m._base_power_override, m._request_target)
    found = _calc_moves.get(key)
    if found is None:
        if len(_calc_moves) > 10_000:
            _calc_moves.clear()
        found = _calc_moves[key] = CalcMove(m)
    return found


class ReadOnce:
    """Forwards attribute reads to ``target`` and keeps each value after the first read.
    Only for the length of one calculator call: the target must not change meanwhile."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        self.__dict__[name] = value
        return value


class CalcBattle(ReadOnce):
    """A :class:`ReadOnce` battle whose ``get_pokemon`` and active Pokémon are
    :class:`ReadOnce` views too (looked up once per identifier, as the battle would)."""

    def __init__(self, battle: AbstractBattle) -> None:
        super().__init__(battle)
        self._mons: dict[str, ReadOnce | None] = {}
        self._views: dict[int, ReadOnce] = {}
        # plain attributes: read without a call from now on
        self.active_pokemon = self._view(battle.active_pokemon)
        self.opponent_active_pokemon = self._view(battle.opponent_active_pokemon)
        self.all_active_pokemons = [self._view(mon) for mon in battle.all_active_pokemons]

    def _view(self, mon: Pokemon | None) -> ReadOnce | None:
        if mon is None:
            return None
        view = self._views.get(id(mon))
        if view is None:
            view = self._views[id(mon)] = ReadOnce(mon)
        return view

    def get_pokemon(self, identifier: str, *args: Any, **kwargs: Any) -> Any:
        """``battle.get_pokemon`` as a view, looked up once per identifier."""
        if args or kwargs:
            return self._target.get_pokemon(identifier, *args, **kwargs)
        found = self._mons.get(identifier)
        if found is None:
            found = self._mons[identifier] = self._view(self._target.get_pokemon(identifier))
        return found
