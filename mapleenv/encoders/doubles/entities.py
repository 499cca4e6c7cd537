"""The doubles entity encoder (``encoder="doubles_entities"``): ``doubles_calc``'s vector,
unchanged, then one block per Pokémon (12) and per move of our two actives (8), the entities that
``model=attention`` reads as tokens on doubles.

``doubles_calc`` describes the field and the two actives a side well but knows little of the
benched Pokémon (HP, fainted, a type-matchup summary). A Pokémon block here is the
``singles_entities`` encoder's (types, Tera type, base stats, level, status, item and ability
groups; offense and defense against the other side's actives, the best of the two), plus which
active slot it holds and, while active, its boosts and volatiles. A move block is
``singles_entities``'s static move data (power, type, category, accuracy, priority, effects) with
its PP, whether it can be chosen now, and its type multiplier and expected damage
(``doubles_calc``'s estimate) against each foe. Layout: :data:`LAYOUT` (docs/observation.md).
"""

from __future__ import annotations

import numpy as np
from poke_env.battle.double_battle import DoubleBattle
from poke_env.battle.pokemon import Pokemon
from poke_env.battle.pokemon_type import PokemonType

from mapleenv.actions.doubles import NUM_MOVE_SLOTS, move_slots
from mapleenv.encoders.doubles import calc
from mapleenv.encoders.features import dex, layout
from mapleenv.encoders.features.futility import current_types
from mapleenv.encoders.features.layout import Block, Feature
from mapleenv.encoders.features.profile import move_max_pp, move_static, request_tera_types
from mapleenv.encoders.singles.entities import SinglesEntitiesEncoder

TEAM = layout.TEAM_SIZE
MOVES = 2 * NUM_MOVE_SLOTS  # our slot a's four move slots, then slot b's

CONTEXT = tuple(Feature(b.name, b.size, b.low, b.high, b.content) for b in calc.BLOCKS)
POKEMON = (
    *layout.POKEMON,
    Feature("slot", 2, 0.0, 1.0, "1 at [0] if in our (or the foe's) active slot a, [1] if b"),
    *layout.ACTIVE,  # boosts and volatiles, 0 unless active
)
_RICH_MOVE = {f.name: f for f in layout.MOVE}
MOVE = (
    _RICH_MOVE["present"],
    _RICH_MOVE["available"],
    _RICH_MOVE["pp"],
    _RICH_MOVE["stab"],
    Feature("effectiveness", 2, 0.0, 4.0, "type multiplier on the foe's a, b (0: empty, status)"),
    Feature("damage", 2, 0.0, 1.0, "doubles_calc's expected damage / the foe's a, b current HP"),
    *layout.MOVE[layout.MOVE.index(_RICH_MOVE["base_power"]) :],  # static per move id
)
LAYOUT = layout.Layout(
    "doubles_entities",
    (
        Block("context", 1, CONTEXT, "the `doubles_calc` observation, unchanged"),
        Block(
            "own_team",
            TEAM,
            POKEMON,
            "our Pokémon in `battle.team` order (= switch sub-actions 1-6)",
        ),
        Block(
            "opponent_team",
            TEAM,
            POKEMON,
            "the opponent's Pokémon in reveal order; unrevealed slots: all 0 but hp = 1",
        ),
        Block(
            "moves",
            MOVES,
            MOVE,
            "our slot a's moves then slot b's, in sub-action order (move k: 7 + 5k + target)",
        ),
    ),
)
_P = LAYOUT.block("own_team").offsets
_M = LAYOUT.block("moves").offsets
_POKEMON_WIDTH = LAYOUT.block("own_team").width
_MOVE_WIDTH = LAYOUT.block("moves").width
_CONTEXT_NAMES = [b.name for b in calc.BLOCKS]
_ESTIMATE = sum(b.size for b in calc.BLOCKS[: _CONTEXT_NAMES.index("move_estimate")])


class DoublesEntitiesEncoder:
    """``doubles_calc`` plus per-Pokémon and per-move blocks (:data:`LAYOUT`); doubles only."""

    game_types = ("doubles",)

    def __init__(self) -> None:
        self._context = calc.DoublesCalcEncoder()
        self._rich = SinglesEntitiesEncoder()  # its per-Pokémon profile cache and block writers
        self.size = LAYOUT.size
        self.low, self.high = LAYOUT.bounds()

    def encode(self, battle: DoubleBattle) -> np.ndarray:
        context = self._context.encode(battle)  # checks the battle is a doubles one
        out = np.zeros(self.size, np.float32)
        out[: context.size] = context
        ours = battle.active_pokemon
        foes = battle.opponent_active_pokemon
        gen = battle.gen
        tera = request_tera_types(battle)
        our_types = [current_types(m) for m in ours if m is not None]
        foe_types = [current_types(m) if m is not None else None for m in foes]
        present_foe_types = [t for t in foe_types if t is not None]
        base = LAYOUT.offsets["own_team"]
        for i, mon in enumerate(list(battle.team.values())[:TEAM]):
            o = base + i * _POKEMON_WIDTH
            self._pokemon(out, o, mon, gen, ours, present_foe_types, tera.get(mon.name), False)
        base = LAYOUT.offsets["opponent_team"]
        opponents = list(battle.opponent_team.values())[:TEAM]
        for i in range(TEAM):
            o = base + i * _POKEMON_WIDTH
            if i < len(opponents):
                self._pokemon(out, o, opponents[i], gen, foes, our_types, None, True)
            else:
                out[o + _P["hp"]] = 1.0
        for pos in range(2):
            self._moves(out, battle, pos, foe_types, context)
        return out

    def _pokemon(
        self,
        out: np.ndarray,
        o: int,
        mon: Pokemon,
        gen: int,
        own_side: list[Pokemon | None],
        other_types: list[tuple[PokemonType, ...]],
        tera: PokemonType | None,
        opponent: bool,
    ) -> None:
        """``singles_entities``'s Pokémon block (offense and defense: the best against either of the
        other side's actives, whose types are ``other_types``), then its active slot, boosts
        and volatiles."""
        attack_types = self._rich._pokemon(out, o, mon, gen, (), opponent, tera)
        if not mon.fainted and other_types:
            types = current_types(mon)
            out[o + _P["offense"]] = max(
                dex.best_effectiveness(gen, attack_types, other) for other in other_types
            )
            out[o + _P["defense"]] = max(
                dex.best_effectiveness(gen, other, types) for other in other_types
            )
        for pos, active in enumerate(own_side):
            if active is mon:
                out[o + _P["slot"] + pos] = 1.0
                self._rich._active(out, o + _P["boosts"], mon)

    def _moves(
        self,
        out: np.ndarray,
        battle: DoubleBattle,
        pos: int,
        foe_types: list[tuple[PokemonType, ...] | None],
        context: np.ndarray,
    ) -> None:
        user = battle.active_pokemon[pos]
        if user is None:
            return
        gen = battle.gen
        available = {m.id for m in battle.available_moves[pos]}
        stab = {t._value_ for t in (*current_types(user), *user.base_types)}
        for k, move in enumerate(move_slots(battle, pos)[:NUM_MOVE_SLOTS]):
            column = pos * NUM_MOVE_SLOTS + k
            o = LAYOUT.offsets["moves"] + column * _MOVE_WIDTH
            static, mtype, damaging = move_static(gen, move.id)
            out[o + _M["present"]] = 1.0
            out[o + _M["available"]] = move.id in available
            max_pp = move_max_pp(move)
            out[o + _M["pp"]] = min(max(move.current_pp / max_pp, 0.0), 1.0) if max_pp > 0 else 0.0
            out[o + _M["stab"]] = damaging and mtype is not None and mtype._value_ in stab
            out[o + _M["base_power"] : o + _MOVE_WIDTH] = static
            if not damaging:
                continue
            for f, types in enumerate(foe_types):
                if types is not None:
                    out[o + _M["effectiveness"] + f] = dex.effectiveness(gen, mtype, types)
                    out[o + _M["damage"] + f] = context[_ESTIMATE + 2 * column + f]
