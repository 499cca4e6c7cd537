"""Damage estimates between the two actives with poke-env's calculator, memoised.

``poke_env.calc.calculate_damage`` costs ~0.2 ms a call here, close to the whole encode
budget, so its results are cached and reused while nothing it reads has changed:

* the key holds what the calculator reads for the pair: species, level, stats, current
  types and Tera state, item, ability, status, the effects the calculator checks
  (protection, Flash Fire, Protosynthesis/Quark Drive, ...), weather, terrains and the
  defender's screens; HP only through the thresholds some abilities test (Multiscale
  at full HP, Blaze & co. at 1/3, Defeatist at 1/2) and, for moves whose power scales
  with HP (Eruption, Flail, ...), the exact HP;
* stat boosts are factored out: the calculator runs with both sides' boosts at 0 and
  the result is scaled by the boost multipliers of the attacking and defending stat
  it uses (Body Press, Foul Play, Psyshock, Unaware and ignore-boost moves handled).
  Moves whose power or category depends on boosts (Stored Power, Punishment, Photon
  Geyser, Tera Blast) run with the real boosts and keep them in their key.

Each call that remains reads :mod:`~mapleenv.encoders.features.calcview` views of the move
and the battle, which compute each property the calculator reads once (same rolls).

The calculator needs every stat of both Pokémon; opponents' stats are unknown, so they
are estimated (:func:`mapleenv.encoders.features.dex.estimated_stats`: random-battle EVs/IVs,
neutral nature, the level Showdown shows). Estimated stats and zeroed boosts are set on
the Pokémon only for the duration of the call (the battle waits for our order then).
"""

from __future__ import annotations

import logging
import time
from functools import cache
from typing import Any

from poke_env.battle import AbstractBattle, Effect, Move, MoveCategory, Pokemon
from poke_env.calc import calculate_damage

from mapleenv.encoders.features import dex, vocab
from mapleenv.encoders.features.calcview import CalcBattle, calc_move

logger = logging.getLogger(__name__)

HP_SCALED_MOVES = frozenset(
    {
        "eruption",
        "waterspout",
        "dragonenergy",
        "flail",
        "reversal",
        "crushgrip",
        "wringout",
        "hardpress",
        "finalgambit",
        "painsplit",
        "brine",
    }
)
BOOST_SCALED_MOVES = frozenset(
    {"storedpower", "powertrip", "punishment", "photongeyser", "terablast"}
)
# Effects poke_env.calc reads (protection makes a move deal 0).
CALC_EFFECTS = frozenset(
    {
        Effect.PROTECT,
        Effect.SPIKY_SHIELD,
        Effect.KINGS_SHIELD,
        Effect.BANEFUL_BUNKER,
        Effect.BURNING_BULWARK,
        Effect.OBSTRUCT,
        Effect.MAX_GUARD,
        Effect.SILK_TRAP,
        Effect.FLASH_FIRE,
        Effect.HELPING_HAND,
        Effect.SLOW_START,
        Effect.PROTOSYNTHESISATK,
        Effect.PROTOSYNTHESISDEF,
        Effect.PROTOSYNTHESISSPA,
        Effect.PROTOSYNTHESISSPD,
        Effect.QUARKDRIVEATK,
        Effect.QUARKDRIVEDEF,
        Effect.QUARKDRIVESPA,
        Effect.QUARKDRIVESPD,
    }
)
FULL_HP_ABILITIES = frozenset({"multiscale", "shadowshield", "terashell"})
LOW_HP_ABILITIES = frozenset({"blaze", "torrent", "overgrow", "swarm", "defeatist"})
ZERO_BOOSTS = {"accuracy": 0, "atk": 0, "def": 0, "evasion": 0, "spa": 0, "spd": 0, "spe": 0}


def boost_multiplier(stage: int) -> float:
    """Stat multiplier of a boost stage (-6..6)."""
    stage = max(-6, min(6, stage))
    return (2 + stage) / 2 if stage >= 0 else 2 / (2 - stage)


def hp_stat(mon: Pokemon, gen: int) -> int:
    """Max HP: exact for our Pokémon, estimated for the opponent's."""
    hp = mon.stats.get("hp")
    if hp:
        return int(hp)
    return dex.estimated_stats(gen, mon.species, mon.level)["hp"]


def current_hp(mon: Pokemon, gen: int) -> float:
    """Current HP in points (estimated from the shown fraction for opponents)."""
    return mon.current_hp_fraction * hp_stat(mon, gen)


_CALC_EFFECT_CODES = frozenset(e._value_ for e in CALC_EFFECTS)
_SCREEN_CODES = frozenset(c._value_ for c in vocab.SCREENS)


def _signature(mon: Pokemon) -> tuple[Any, ...]:
    # Enum members are keyed by ``_value_``: hashing members is a Python-level call.
    ability = mon.ability
    hp_flags: tuple[bool, ...] = ()
    if ability in FULL_HP_ABILITIES or ability in LOW_HP_ABILITIES:
        frac = mon.current_hp_fraction
        hp_flags = (frac >= 1.0, frac <= 0.5, frac <= 1 / 3)
    effects = mon.effects
    relevant = (
        tuple(c for c in (e._value_ for e in effects) if c in _CALC_EFFECT_CODES) if effects else ()
    )
    type_2 = mon.type_2
    status = mon.status
    return (
        mon.species,
        mon.level,
        tuple(mon.stats.values()),
        mon.type_1._value_,
        type_2._value_ if type_2 is not None else 0,
        mon.is_terastallized,
        mon.item,
        ability,
        status._value_ if status is not None else 0,
        relevant,
        hp_flags,
    )


@cache
def boost_info(gen: int, move_id: str) -> tuple[str, str, bool, bool]:
    """(attacking stat, defending stat, uses the target's attack, ignores defensive
    boosts) of a move, as poke_env.calc picks them."""
    m = dex.move(gen, move_id)
    physical = m.category is MoveCategory.PHYSICAL
    attack = "def" if move_id == "bodypress" else ("atk" if physical else "spa")
    hits_physical = physical or m.entry.get("overrideDefensiveStat") == "def"
    return (
        attack,
        "def" if hits_physical else "spd",
        move_id == "foulplay",
        bool(m.ignore_defensive),
    )


def boost_factor(m: Move, attacker: Pokemon, defender: Pokemon) -> float:
    """Ratio by which the attacking/defending boosts scale ``m``'s unboosted damage."""
    attack_stat, defense_stat, foul_play, ignore_defensive = boost_info(m.gen, m.id)
    factor = 1.0
    if defender.ability != "unaware":
        source = defender if foul_play else attacker
        stage = source.boosts.get(attack_stat, 0)
        if stage:
            factor *= boost_multiplier(stage)
    if not ignore_defensive and attacker.ability != "unaware":
        stage = defender.boosts.get(defense_stat, 0)
        if stage:
            factor /= boost_multiplier(stage)
    return factor


class DamageEstimator:
    """Min/max damage rolls of a move between the actives of a battle, cached.

    :param max_entries: the cache is cleared when it grows past this.

    The calculator reads :mod:`~mapleenv.encoders.features.calcview` views of the move and the
    battle (same result, fewer property look-ups) unless ``read_once`` is set to False.
    """

    def __init__(self, max_entries: int = 100_000) -> None:
        self.max_entries = max_entries
        self.read_once = True  # calculator on read-once views (False: the objects as-is)
        self._cache: dict[tuple[Any, ...], tuple[int, int] | None] = {}
        self._contexts: dict[tuple[Any, ...], tuple[int]] = {}
        self._context_ids = 0
        self.calls = 0
        self.hits = 0
        self.failures = 0
        self.calc_ns = 0  # time spent inside poke_env.calc

    def context(
        self, battle: AbstractBattle, attacker: Pokemon, defender: Pokemon, we_attack: bool
    ) -> tuple[Any, ...]:
        """The part of the cache key shared by all moves of ``attacker`` on ``defender``."""
        defender_side = battle.opponent_side_conditions if we_attack else battle.side_conditions
        screens = tuple(c for c in (s._value_ for s in defender_side) if c in _SCREEN_CODES)
        context = (
            _signature(attacker),
            _signature(defender),
            tuple(w._value_ for w in battle.weather),
            tuple(f._value_ for f in battle.fields),
            screens,
        )
        # Interned to a small int: per-move keys then hash cheaply.
        found = self._contexts.get(context)
        if found is None:
            self._context_ids += 1  # never reused, even after the cache is cleared
            found = self._contexts[context] = (self._context_ids,)
        return found

    def rolls(
        self,
        battle: AbstractBattle,
        attacker: Pokemon,
        attacker_role: str,
        defender: Pokemon,
        defender_role: str,
        m: Move,
        context: tuple[Any, ...],
    ) -> tuple[float, float] | None:
        """(min, max) damage of ``m``; ``None`` if the calculator fails on this state."""
        move_id = m.id
        exact_boosts = move_id in BOOST_SCALED_MOVES
        key: tuple[Any, ...] = (context, move_id)
        if move_id in HP_SCALED_MOVES:
            key += (attacker.current_hp, defender.current_hp)
        if exact_boosts:
            key += (tuple(attacker.boosts.values()), tuple(defender.boosts.values()))
        result = self._cache.get(key, False)
        if result is False:
            result = self._calculate(
                battle,
                attacker,
                attacker_role,
                defender,
                defender_role,
                m,
                zero_boosts=not exact_boosts,
            )
            if len(self._cache) >= self.max_entries:
                self._cache.clear()
                self._contexts.clear()
            self._cache[key] = result
        else:
            self.hits += 1
        if result is None or exact_boosts:
            return result
        factor = boost_factor(m, attacker, defender)
        return result[0] * factor, result[1] * factor

    def _calculate(
        self,
        battle: AbstractBattle,
        attacker: Pokemon,
        attacker_role: str,
        defender: Pokemon,
        defender_role: str,
        m: Move,
        zero_boosts: bool,
    ) -> tuple[int, int] | None:
        self.calls += 1
        gen = battle.gen
        saved: list[tuple[Pokemon, dict[str, Any], dict[str, int]]] = []
        for mon in (attacker, defender):
            stats, boosts = mon.stats, mon.boosts
            saved.append((mon, stats, boosts))
            if any(v is None for v in stats.values()):
                mon.stats = dict(dex.estimated_stats(gen, mon.species, mon.level))
            if zero_boosts:
                mon.boosts = dict(ZERO_BOOSTS)
        start = time.perf_counter_ns()
        try:
            ids = attacker.identifier(attacker_role), defender.identifier(defender_role)
            if self.read_once:
                low, high = calculate_damage(*ids, calc_move(m), CalcBattle(battle))  # type: ignore[arg-type]
            else:
                low, high = calculate_damage(*ids, m, battle)
            return int(low), int(high)
        except Exception as exc:  # noqa: BLE001 - the calculator has unhandled corners
            self.failures += 1
            logger.debug(
                "damage calc failed for %s (%s -> %s) in %s: %r",
                m.id,
                attacker.species,
                defender.species,
                battle.battle_tag,
                exc,
            )
            return None
        finally:
            self.calc_ns += time.perf_counter_ns() - start
            for mon, stats, boosts in saved:
                mon.stats = stats
                mon.boosts = boosts
