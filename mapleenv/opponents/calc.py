"""``calc``: a 1-ply damage-calculator opponent, held out from training (evaluation only).

It reads poke-env's damage calculator through the rich encoder's helpers (the cached
:class:`~mapleenv.encoders.features.damage.DamageEstimator` with estimated opponent stats, the
opponent's likely moves of :class:`~mapleenv.encoders.features.threat.ThreatEstimator`, futile
moves of :mod:`~mapleenv.encoders.features.futility`). No search; deterministic given the battle.

* An attack's value is its expected damage as a fraction of the target's current HP (mean
  roll, capped at 1, times accuracy and the chance an unknown ability does not block it).
  A KO ranks first, a priority KO before other KOs.
* Terastallize (once, when the request allows) when it makes an attack a KO or worth
  :data:`TERA_GAIN` more than the best choice without it; that attack is then used.
* Status moves: never a futile one; the rules of :func:`status_value` give a useful one a
  fixed value compared with the attacks' (hazards while not set, recovery when low,
  setup when safe, a status condition while not threatened).
* Switch out when the opponent's best likely move would deal :data:`THREATENED` of our
  current HP and our best attack is under :data:`WEAK`, to the bench member with the best
  matchup (damage dealt minus damage taken, same calculator) if it beats the active's by
  :data:`SWITCH_MARGIN`; never two voluntary switches in a row. Forced switches pick by
  the same score.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from poke_env.battle import AbstractBattle, Battle, Move, Pokemon, PokemonType
from poke_env.battle.move import SPECIAL_MOVES
from poke_env.player import BattleOrder, Player

from mapleenv.encoders.features import dex, layout
from mapleenv.encoders.features.damage import DamageEstimator, current_hp
from mapleenv.encoders.features.futility import current_types, move_futility
from mapleenv.encoders.features.random_sets import move_properties, set_knowledge
from mapleenv.encoders.features.threat import ThreatEstimator

TERA_GAIN = 0.2  # Terastallize when the best attack's value rises by this much
THREATENED = 0.5  # the opponent's best move takes this fraction of our current HP
WEAK = 0.35  # ... and our best attack is worth less than this: consider switching
SWITCH_MARGIN = 0.2  # the bench member's matchup must beat the active's by this much
SAFE_THREAT = 0.25  # set up only while the opponent threatens less than this
RECOVER_BELOW = 0.4  # recover below this HP fraction
TEAM_SIZE = 6  # random battles; unrevealed opponents count as alive
# Values of useful status moves, on the attacks' scale (a fraction of the target's HP).
RECOVERY_VALUE = 0.6
SETUP_VALUE = 0.5
HAZARD_VALUE = 0.45
STATUS_VALUE = 0.4
_FLAG = {name: k for k, name in enumerate(layout.SET_PROPERTIES)}


@contextmanager
def terastallized(mon: Pokemon, tera: PokemonType) -> Iterator[None]:
    """``mon`` as if terastallized into ``tera`` for the calculator (poke-env keeps the
    state in private fields and does not record our Tera type); restored after."""
    saved = mon._terastallized, mon._terastallized_type
    mon._terastallized, mon._terastallized_type = True, tera
    try:
        yield
    finally:
        mon._terastallized, mon._terastallized_type = saved


def request_tera_type(battle: Battle) -> PokemonType | None:
    """The Tera type the current request offers our active (``canTerastallize``), if any."""
    if not battle.can_tera:
        return None
    active = (battle.last_request.get("active") or [{}])[0]
    name = active.get("canTerastallize")
    try:
        return PokemonType.from_name(name) if isinstance(name, str) else None
    except (KeyError, ValueError):
        return None


def opponents_alive(battle: AbstractBattle) -> int:
    """The opponent's Pokémon not known to have fainted."""
    return TEAM_SIZE - sum(mon.fainted for mon in battle.opponent_team.values())


def status_value(
    battle: AbstractBattle, me: Pokemon, opp: Pokemon, m: Move, threat: float
) -> float:
    """Value of a non-futile status move ``m`` (0: no rule makes it useful now).

    ``threat``: the opponent's best move as a fraction of our current HP."""
    flags = move_properties(battle.gen, m.id)
    hp = me.current_hp_fraction
    if flags[_FLAG["recovery"]]:
        # worth it while one hit takes less than half our max HP back
        return RECOVERY_VALUE if hp < RECOVER_BELOW and threat * hp < 0.5 else 0.0
    if flags[_FLAG["hazard"]]:
        unset = m.side_condition not in battle.opponent_side_conditions
        return (
            HAZARD_VALUE if unset and opponents_alive(battle) >= 3 and threat < THREATENED else 0.0
        )
    if flags[_FLAG["setup"]]:
        boosted = sum(max(b, 0) for b in me.boosts.values())
        return SETUP_VALUE if threat < SAFE_THREAT and hp > 0.5 and boosted < 2 else 0.0
    if flags[_FLAG["status"]]:
        healthy = opp.current_hp_fraction > 0.5
        return STATUS_VALUE if threat < THREATENED and healthy else 0.0
    return 0.0


class CalcPlayer(Player):
    """The ``calc`` opponent (see module docs): a poke-env ``Player`` for singles whose
    ``choose_move`` is synchronous; its own damage cache lives as long as the player."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.format_is_doubles:
            raise ValueError(f"the calc opponent plays singles only, not {self.format!r}")
        self.damage = DamageEstimator(max_entries=20_000)
        self.threats = ThreatEstimator(self.damage, calcs=3)
        self._last_switch: dict[str, int] = {}  # battle tag -> turn of a voluntary switch

    # -- the calculator ----------------------------------------------------------------

    def attack_value(
        self, battle: AbstractBattle, attacker: Pokemon, defender: Pokemon, m: Move, ours: bool
    ) -> tuple[float, bool]:
        """(expected fraction of ``defender``'s current HP, KO on the mean roll) of ``m``;
        ``ours``: ``attacker`` is on our side."""
        hp = current_hp(defender, battle.gen)
        if hp <= 0 or m.id in SPECIAL_MOVES or not dex.is_damaging(m):
            return 0.0, False
        roles = (battle.player_role, battle.opponent_role)
        a_role, d_role = roles if ours else roles[::-1]
        context = self.damage.context(battle, attacker, defender, we_attack=ours)
        rolls = self.damage.rolls(battle, attacker, a_role, defender, d_role, m, context)  # type: ignore[arg-type]
        if rolls is None:
            return 0.0, False
        fraction = (rolls[0] + rolls[1]) / 2.0 / hp
        return min(fraction, 1.0) * m.accuracy, fraction >= 1.0

    def threat(self, battle: AbstractBattle, opp: Pokemon, mon: Pokemon) -> float:
        """The opponent's best revealed or likely move on ``mon``, as a fraction of its
        current HP (the threat block's candidates, :class:`ThreatEstimator`)."""
        candidates = self.threats.candidates(
            battle.gen, opp, mon, current_types(mon), current_types(opp)
        )
        values = [self.attack_value(battle, opp, mon, m, ours=False)[0] for m, _ in candidates]
        return max(values, default=0.0)

    def matchup(self, battle: AbstractBattle, mon: Pokemon, opp: Pokemon) -> float:
        """Best expected damage ``mon`` deals to ``opp`` minus the damage it takes (each a
        fraction of the target's current HP)."""
        deal = max(
            (self.attack_value(battle, mon, opp, m, ours=True)[0] for m in mon.moves.values()),
            default=0.0,
        )
        return deal - self.threat(battle, opp, mon)

    # -- decisions ---------------------------------------------------------------------

    def choose_move(self, battle: AbstractBattle) -> BattleOrder:
        """The order for ``battle`` (the opponent's own view, see module docs)."""
        if not isinstance(battle, Battle):
            raise ValueError("the calc opponent plays singles battles only")
        me, opp = battle.active_pokemon, battle.opponent_active_pokemon
        moves, switches = battle.available_moves, battle.available_switches
        if not moves:
            best = self.best_switch(battle)
            return self.create_order(best) if best is not None else self.choose_random_move(battle)
        if me is None or opp is None or opp.fainted or (len(moves) == 1 and not switches):
            return self.create_order(moves[0])
        threat = self.threat(battle, opp, me)
        ranked = self.rank_moves(battle, me, opp, threat)
        if not ranked:
            best = self.best_switch(battle)
            return self.create_order(best) if best is not None else self.choose_random_move(battle)
        (ko, _, value), m = ranked[0]
        if not ko and self.should_switch(battle, value, threat):
            best = self.best_switch(battle)
            if (
                best is not None
                and self.matchup(battle, best, opp) > value - threat + SWITCH_MARGIN
            ):
                self._remember_switch(battle)
                return self.create_order(best)
        tera_move = self.tera_move(battle, me, opp, ranked)
        if tera_move is not None:
            return self.create_order(tera_move, terastallize=True)
        return self.create_order(m)

    def rank_moves(
        self, battle: Battle, me: Pokemon, opp: Pokemon, threat: float
    ) -> list[tuple[tuple[bool, bool, float], Move]]:
        """Non-futile available moves, best first: (KO, priority KO, value) and the move."""
        abilities = set_knowledge(battle.gen, opp).abilities or None
        keyed = []
        for k, m in enumerate(battle.available_moves):
            if m.id in SPECIAL_MOVES:
                keyed.append(((False, False, 0.0), -k, m))
                continue
            futility = move_futility(battle, m, abilities)
            if futility.futile:
                continue
            if dex.is_damaging(m):
                value, ko = self.attack_value(battle, me, opp, m, ours=True)
                value *= 1.0 - futility.ability_risk
                key = (ko, ko and m.priority > 0, value)
            else:
                key = (False, False, status_value(battle, me, opp, m, threat))
            keyed.append((key, -k, m))  # -k: ties go to the request's order
        keyed.sort(key=lambda item: (item[0], item[1]), reverse=True)
        return [(key, m) for key, _, m in keyed]

    def tera_move(
        self,
        battle: Battle,
        me: Pokemon,
        opp: Pokemon,
        ranked: list[tuple[tuple[bool, bool, float], Move]],
    ) -> Move | None:
        """The attack to use terastallized, if Terastallizing makes one a KO or raises the
        best value by :data:`TERA_GAIN` (not when the best choice already KOs)."""
        (ko, _, value), _ = ranked[0]
        tera = request_tera_type(battle)
        if ko or tera is None:
            return None
        attacks = [m for _, m in ranked if dex.is_damaging(m) and m.id not in SPECIAL_MOVES]
        best: tuple[tuple[bool, float], Move] | None = None
        with terastallized(me, tera):
            for m in attacks:
                tera_value, tera_ko = self.attack_value(battle, me, opp, m, ours=True)
                if best is None or (tera_ko, tera_value) > best[0]:
                    best = ((tera_ko, tera_value), m)
        if best is None or not (best[0][0] or best[0][1] >= value + TERA_GAIN):
            return None
        return best[1]

    def should_switch(self, battle: Battle, value: float, threat: float) -> bool:
        """Threatened, weak and free to switch, and not switched out by choice last turn."""
        if battle.trapped or not battle.available_switches:
            return False
        if self._last_switch.get(battle.battle_tag) == battle.turn - 1:
            return False
        return threat >= THREATENED and value < WEAK

    def best_switch(self, battle: Battle) -> Pokemon | None:
        """The bench member with the best :meth:`matchup` (by HP if no opponent is out)."""
        switches = battle.available_switches
        opp = battle.opponent_active_pokemon
        if not switches:
            return None
        if opp is None or opp.fainted:
            return max(switches, key=lambda mon: mon.current_hp_fraction)
        scores = [self.matchup(battle, mon, opp) for mon in switches]
        return switches[scores.index(max(scores))]

    def _remember_switch(self, battle: Battle) -> None:
        if len(self._last_switch) > 1000:
            self._last_switch.clear()
        self._last_switch[battle.battle_tag] = battle.turn
