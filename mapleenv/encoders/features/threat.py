"""The rich encoder's ``threat`` block: the opponent's best known or likely move against
our active Pokémon, by poke-env's damage calculator.

Calculator calls are the encoder's most expensive work, so candidates are ranked by a
cheap score first and only the close ones are calculated (docs/observation.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from poke_env.battle import AbstractBattle, Move, MoveCategory, Pokemon, PokemonType

from mapleenv.encoders.features import dex, layout
from mapleenv.encoders.features.damage import DamageEstimator, current_hp
from mapleenv.encoders.features.profile import move_static

_T = layout.Block("threat", 1, layout.THREAT, "").offsets
# Threat candidates after the first go through the calculator only while their cheap
# score is within this fraction of the first's (or nothing so far did damage).
THREAT_CLOSE = 0.75


_score_data: dict[tuple[int, str], tuple[PokemonType, int, bool]] = {}


def score_data(m: Move) -> tuple[PokemonType, int, bool]:
    """(type, base power or 60, physical) of ``m``; cached per move id for plain moves
    (each property is a GenData look-up and parse)."""
    plain = type(m) is Move and m._base_power_override is None
    key = (m.gen, m.id)
    found = _score_data.get(key) if plain else None
    if found is None:
        found = (m.type, m.base_power or 60, m.category is MoveCategory.PHYSICAL)
        if plain:
            _score_data[key] = found
    return found


class ThreatEstimator:
    """Writes the threat block. ``calcs``: at most this many of the opponent's candidate
    moves (ranked by base power x STAB x type multiplier x stat ratio) go through the
    damage calculator: the first always, the next ones only while their score is within
    :data:`THREAT_CLOSE` of the first's or nothing so far dealt damage."""

    def __init__(self, damage: DamageEstimator, calcs: int = 3) -> None:
        self.damage = damage
        self.calcs = calcs
        self._candidates: dict[tuple[Any, ...], tuple[tuple[Move, float], ...]] = {}

    def candidates(
        self,
        gen: int,
        opp: Pokemon,
        me: Pokemon,
        me_types: tuple[PokemonType, ...],
        opp_types: tuple[PokemonType, ...],
    ) -> tuple[tuple[Move, float], ...]:
        """The opponent's moves worth a calculator call, best first by a cheap score:
        base power x STAB x type multiplier x its attacking / our defending stat."""
        key = (gen, opp.species, opp.level, tuple(opp.moves), me.species, me_types, opp_types)
        found = self._candidates.get(key)
        if found is not None:
            return found
        revealed = [m for m in opp.moves.values() if move_static(gen, m.id)[2]]
        pool = list(revealed)
        if len(opp.moves) < 4:
            bs = opp.base_stats
            known = {m.id for m in revealed}
            pool += [
                m
                for m in dex.likely_damaging_moves(
                    gen,
                    opp.species,
                    opp.base_species,
                    tuple(opp.base_types),
                    bs["atk"] >= bs["spa"],
                )
                if m.id not in known
            ]
        stab = set(opp_types) | set(opp.base_types)
        theirs = dex.estimated_stats(gen, opp.species, opp.level)
        ours = me.stats if me.stats.get("def") else dex.estimated_stats(gen, me.species, me.level)

        def score(m: Move) -> float:
            t, power, physical = score_data(m)
            ratio = (
                theirs["atk"] / max(ours["def"] or 1, 1)
                if physical
                else theirs["spa"] / max(ours["spd"] or 1, 1)
            )
            return power * (1.5 if t in stab else 1.0) * ratio * dex.effectiveness(gen, t, me_types)

        scored = sorted(((score(m), m) for m in pool), key=lambda x: x[0], reverse=True)
        found = tuple((m, sc) for sc, m in scored[: self.calcs])
        if len(self._candidates) > 10_000:
            self._candidates.clear()
        self._candidates[key] = found
        return found

    def encode(
        self,
        out: np.ndarray,
        o: int,
        battle: AbstractBattle,
        me: Pokemon,
        opp: Pokemon,
        me_types: tuple[PokemonType, ...],
        opp_types: tuple[PokemonType, ...],
    ) -> None:
        """Write the threat block of ``battle`` at offset ``o`` of ``out``."""
        gen = battle.gen
        out[o + _T["moves_known"]] = min(len(opp.moves), 4) / 4.0
        my_hp = current_hp(me, gen)
        if my_hp <= 0:
            return
        context = self.damage.context(battle, opp, me, we_attack=False)
        best: tuple[float, float, Move] | None = None
        candidates = self.candidates(gen, opp, me, me_types, opp_types)
        for m, score in candidates:
            if best is not None and best[0] > 0 and score < THREAT_CLOSE * candidates[0][1]:
                break  # the cheap score says the rest are clearly weaker
            rolls = self.damage.rolls(
                battle,
                opp,
                battle.opponent_role,
                me,  # type: ignore[arg-type]
                battle.player_role,
                m,
                context,
            )  # type: ignore[arg-type]
            if rolls is None:
                continue
            mean = (rolls[0] + rolls[1]) / 2.0
            if best is None or mean > best[0]:
                best = (mean, float(rolls[1]), m)
        if best is None:
            return
        mean, high, m = best
        out[o + _T["damage"]] = min(mean / my_hp, 1.0)
        out[o + _T["ko"]] = high >= my_hp
        out[o + _T["effectiveness"]] = dex.effectiveness(gen, m.type, me_types)
        out[o + _T["priority"]] = min(max(m.priority / 5.0, -1.0), 1.0)
        out[o + _T["revealed"]] = m.id in opp.moves
