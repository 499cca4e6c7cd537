"""``SinglesEntitiesEncoder``: what a good player looks at, as one fixed float32 vector.

Registered as encoder ``"rich"``. Feature groups (``docs/observation.md`` has every
feature with its scaling; both are generated from :mod:`mapleenv.encoders.features.layout`):

================= ======== ==================================================
block             size     content
================= ======== ==================================================
own_team          6 x 99   per Pokémon, ``battle.team`` order (switch actions
                           0-5): present/active/fainted, HP, type matchup vs
                           the opposing active, level, types, Tera type and
                           state, base stats, status, item and ability (known
                           bit + high-impact group one-hot)
opponent_team     6 x 99   the same, opponent's Pokémon in reveal order
own_active        1 x 21   boosts, volatile flags
opponent_active   1 x 21   the same for the opponent's active
moves             4 x 42   per action move slot: availability, PP, STAB, type
                           multiplier, poke_env.calc damage / target HP, KO,
                           power, type, category, accuracy, priority, effects
threat            1 x 6    opponent's best known/likely move vs our active
speed             1 x 3    effective speed comparison
field             1 x 36   weather, terrains/rooms, both sides' conditions
battle            1 x 10   turn, Tera, switching, counts
total             1453
================= ======== ==================================================

Every value lies within the ``low``/``high`` bounds of its group; nothing is NaN/inf.
Static data (per species, per move, type matchups) and damage-calculator results are
cached, so a typical step costs a few hundred microseconds (``scripts/bench/bench_encoder.py``).
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
from poke_env.battle import (
    AbstractBattle,
    Battle,
    Field,
    Pokemon,
    PokemonType,
)
from poke_env.data import GenData

from mapleenv.actions import move_slots
from mapleenv.encoders.features import dex, layout, vocab
from mapleenv.encoders.features.damage import DamageEstimator, current_hp
from mapleenv.encoders.features.futility import current_types
from mapleenv.encoders.features.profile import (
    VOLATILE_CODES,
    move_max_pp,
    move_static,
    pokemon_profile,
    request_tera_types,
    speeds,
)
from mapleenv.encoders.features.threat import ThreatEstimator

logger = logging.getLogger(__name__)

UNKNOWN_ITEM = GenData.UNKNOWN_ITEM
_BOOST_MULT = {i: (2 + i) / 2 if i >= 0 else 2 / (2 - i) for i in range(-6, 7)}

# Offsets inside one repetition of each block.
_P = layout.Block("pokemon", 1, layout.POKEMON, "").offsets
_A = layout.Block("active", 1, layout.ACTIVE, "").offsets
_M = layout.Block("move", 1, layout.MOVE, "").offsets
_T = layout.Block("threat", 1, layout.THREAT, "").offsets
_S = layout.Block("speed", 1, layout.SPEED, "").offsets
_F = layout.Block("field", 1, layout.FIELD, "").offsets
_B = layout.Block("battle", 1, layout.BATTLE, "").offsets
_WIDTH = {b.name: b.width for b in layout.LAYOUT}
_OFF = layout.OFFSETS
_MOVE_STATIC = _M["base_power"]  # moves block: static per move id from here on
_PROFILE = _P["level"]  # pokemon block: cached per-Pokémon profile from here on
_TEAM = layout.TEAM_SIZE
_MON_WIDTH = _WIDTH["own_team"]
_PRESENT, _ACTIVE, _FAINTED, _HP = _P["present"], _P["active"], _P["fainted"], _P["hp"]
_OFFENSE, _DEFENSE = _P["offense"], _P["defense"]


class SinglesEntitiesEncoder:
    """Encode a singles battle (seen from our side) into :data:`layout.SIZE` floats.

    :param threat_calcs: at most this many of the opponent's candidate moves go through
        the damage calculator (:class:`~mapleenv.encoders.features.threat.ThreatEstimator`).
    :param cache_entries: bound of the damage-calculator cache.
    """

    def __init__(self, threat_calcs: int = 3, cache_entries: int = 100_000) -> None:
        self.size = layout.SIZE
        self.low, self.high = layout.bounds()
        self.damage = DamageEstimator(cache_entries)
        self.threat = ThreatEstimator(self.damage, threat_calcs)
        self._profiles: dict[tuple[Any, ...], np.ndarray] = {}

    def __repr__(self) -> str:
        return f"SinglesEntitiesEncoder(size={self.size})"

    # ------------------------------------------------------------------ public API
    def encode(self, battle: AbstractBattle) -> np.ndarray:
        """The observation vector of ``battle`` (float32, shape ``(size,)``)."""
        if not isinstance(battle, Battle):
            raise TypeError(
                f"SinglesEntitiesEncoder encodes singles battles (poke_env Battle), "
                f"got {type(battle).__name__}"
            )
        out = np.zeros(self.size, np.float32)
        gen = battle.gen
        me = battle.active_pokemon
        opp = battle.opponent_active_pokemon
        me_types = current_types(me) if me is not None else ()
        opp_types = current_types(opp) if opp is not None else ()

        width = _WIDTH["own_team"]
        base = _OFF["own_team"]
        tera_types = request_tera_types(battle)
        for i, mon in enumerate(list(battle.team.values())[:_TEAM]):
            self._pokemon(
                out,
                base + i * width,
                mon,
                gen,
                opp_types,
                opponent=False,
                tera=tera_types.get(mon.name),
            )
        base = _OFF["opponent_team"]
        opp_team = list(battle.opponent_team.values())[:_TEAM]
        for i in range(_TEAM):
            if i < len(opp_team):
                self._pokemon(out, base + i * width, opp_team[i], gen, me_types, opponent=True)
            else:
                out[base + i * width + _P["hp"]] = 1.0
        if me is not None:
            self._active(out, _OFF["own_active"], me)
        if opp is not None:
            self._active(out, _OFF["opponent_active"], opp)
        self._moves(out, battle, me, opp, me_types, opp_types)
        if me is not None and opp is not None:
            if not battle.force_switch:  # our active is leaving: its threat is moot
                self.threat.encode(out, _OFF["threat"], battle, me, opp, me_types, opp_types)
            self._speed(out, battle, me, opp)
        self._field(out, battle)
        self._battle(out, battle, opp_team)
        return out

    # ------------------------------------------------------------------ blocks
    def _pokemon(
        self,
        out: np.ndarray,
        o: int,
        mon: Pokemon,
        gen: int,
        other_types: tuple[PokemonType, ...],
        opponent: bool,
        tera: PokemonType | None = None,
    ) -> tuple[PokemonType, ...]:
        """Fill one Pokémon block at ``o``; return the types it attacks with (its profile's),
        for callers that rate it against other Pokémon than ``other_types``."""
        out[o + _PRESENT] = 1.0
        out[o + _ACTIVE] = bool(mon.active)
        hp = mon.current_hp_fraction
        out[o + _HP] = min(max(hp, 0.0), 1.0)
        types = current_types(mon)
        bs = mon.base_stats
        tera_type = mon.tera_type or tera
        status = mon.status
        # enum members enter the key as ``_value_`` (hashing members is slow in 3.11)
        key = (
            gen,
            mon.species,
            mon.level,
            tuple([t._value_ for t in types]),
            tera_type._value_ if tera_type is not None else 0,
            mon.is_terastallized,
            (bs["hp"], bs["atk"], bs["def"], bs["spa"], bs["spd"], bs["spe"]),
            status._value_ if status is not None else 0,
            mon.status_counter,
            mon.item,
            mon.ability,
            tuple(mon.moves),
            opponent,
        )
        profile = self._profiles.get(key)
        if profile is None:
            profile = pokemon_profile(key)
            if len(self._profiles) > 20_000:
                self._profiles.clear()
            self._profiles[key] = profile
        vector, attack_types = profile
        out[o + _PROFILE : o + _MON_WIDTH] = vector
        if mon.fainted:
            out[o + _FAINTED] = 1.0
        elif other_types:
            out[o + _OFFENSE] = dex.best_effectiveness(gen, attack_types, other_types)
            out[o + _DEFENSE] = dex.best_effectiveness(gen, other_types, types)
        return attack_types

    @staticmethod
    def _active(out: np.ndarray, o: int, mon: Pokemon) -> None:
        boosts = mon.boosts
        k = o + _A["boosts"]
        for i, stat in enumerate(vocab.BOOSTS):
            b = boosts.get(stat, 0)
            if b:
                out[k + i] = max(-6, min(6, b)) / 6.0
        effects = mon.effects
        k = o + _A["volatiles"]
        if effects:
            codes = {e._value_ for e in effects}
            for i, group in enumerate(VOLATILE_CODES):
                if not group.isdisjoint(codes):
                    out[k + i] = 1.0
        n = len(vocab.VOLATILE_EFFECTS)
        out[k + n] = mon.must_recharge
        out[k + n + 1] = mon.preparing
        out[k + n + 2] = mon.first_turn
        out[k + n + 3] = mon.protect_counter > 0

    def _moves(
        self,
        out: np.ndarray,
        battle: AbstractBattle,
        me: Pokemon | None,
        opp: Pokemon | None,
        me_types: tuple[PokemonType, ...],
        opp_types: tuple[PokemonType, ...],
    ) -> None:
        slots = move_slots(battle)  # type: ignore[arg-type]
        if not slots:
            return
        gen = battle.gen
        available = {m.id for m in battle.available_moves}
        stab_codes = {t._value_ for t in me_types}
        context = None
        opp_hp = 0.0
        if me is not None:
            stab_codes.update(t._value_ for t in me.base_types)
            if opp is not None:
                context = self.damage.context(battle, me, opp, we_attack=True)
                opp_hp = current_hp(opp, gen)
        width = _WIDTH["moves"]
        for slot, m in enumerate(slots[: layout.MOVE_SLOTS]):
            o = _OFF["moves"] + slot * width
            static, mtype, damaging = move_static(gen, m.id)
            out[o + _M["present"]] = 1.0
            out[o + _MOVE_STATIC : o + width] = static
            max_pp = move_max_pp(m)
            out[o + _M["pp"]] = min(max(m.current_pp / max_pp, 0.0), 1.0) if max_pp > 0 else 0.0
            out[o + _M["stab"]] = damaging and mtype is not None and mtype._value_ in stab_codes
            if opp is None:
                continue
            out[o + _M["effectiveness"]] = dex.effectiveness(gen, mtype, opp_types)
            if m.id not in available:
                continue
            out[o + _M["available"]] = 1.0
            if damaging and context is not None and opp_hp > 0:
                rolls = self.damage.rolls(
                    battle,
                    me,
                    battle.player_role,
                    opp,  # type: ignore[arg-type]
                    battle.opponent_role,
                    m,
                    context,
                )  # type: ignore[arg-type]
                if rolls is not None:
                    out[o + _M["damage"]] = min((rolls[0] + rolls[1]) / 2.0 / opp_hp, 1.0)
                    out[o + _M["ko"]] = rolls[1] >= opp_hp

    @staticmethod
    def _speed(out: np.ndarray, battle: AbstractBattle, me: Pokemon, opp: Pokemon) -> None:
        mine, theirs = speeds(battle, me, opp)
        if mine <= 0 or theirs <= 0:
            return
        o = _OFF["speed"]
        out[o + _S["log_ratio"]] = min(max(math.log2(mine / theirs) / 2.0, -1.0), 1.0)
        trick_room = Field.TRICK_ROOM in battle.fields
        out[o + _S["faster"]] = mine < theirs if trick_room else mine > theirs
        out[o + _S["tie"]] = mine == theirs

    @staticmethod
    def _field(out: np.ndarray, battle: AbstractBattle) -> None:
        o = _OFF["field"]
        for w in battle.weather:
            k = vocab.WEATHER_INDEX.get(w)
            if k is not None:
                out[o + _F["weather"] + k] = 1.0
        for f in battle.fields:
            k = vocab.FIELD_INDEX.get(f)
            if k is not None:
                out[o + _F["fields"] + k] = 1.0
        for name, side in (
            ("own_side", battle.side_conditions),
            ("opponent_side", battle.opponent_side_conditions),
        ):
            for cond, value in side.items():
                k = vocab.SIDE_INDEX.get(cond)
                if k is not None:
                    div = vocab.SIDE_CONDITIONS[cond]
                    out[o + _F[name] + k] = min(value / div, 1.0) if div else 1.0

    @staticmethod
    def _battle(out: np.ndarray, battle: AbstractBattle, opp_team: list[Pokemon]) -> None:
        o = _OFF["battle"]
        out[o + _B["turn"]] = min(battle.turn, 100) / 100.0
        out[o + _B["can_tera"]] = bool(battle.can_tera)
        out[o + _B["opponent_can_tera"]] = not battle.opponent_used_tera
        switches = battle.available_switches
        out[o + _B["can_switch"]] = bool(switches)
        out[o + _B["force_switch"]] = bool(battle.force_switch)
        out[o + _B["trapped"]] = bool(battle.trapped)
        out[o + _B["switches"]] = min(len(switches), 5) / 5.0
        team = list(battle.team.values())[:_TEAM]
        out[o + _B["own_alive"]] = sum(not m.fainted for m in team) / _TEAM
        fainted = sum(m.fainted for m in opp_team)
        out[o + _B["opponent_alive"]] = (_TEAM - fainted) / _TEAM
        out[o + _B["opponent_revealed"]] = len(opp_team) / _TEAM
