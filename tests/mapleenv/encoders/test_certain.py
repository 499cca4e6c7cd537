"""Moves that surely fail (encoders/features/certain.py) and the mask without them, on battles
built from protocol lines: the certain failures are masked, the likely ones only flagged."""

from __future__ import annotations

import pytest
from builders import make_battle, own_mon
from poke_env.battle import Move

from mapleenv.actions import legal_actions, mask_from_legal
from mapleenv.encoders import playable_actions
from mapleenv.encoders.features.certain import surely_fails, types_settled, without_futile
from mapleenv.encoders.features.futility import move_futility

PROTECTED = ("|move|p1a: Clefable|Protect|p1a: Clefable", "|-singleturn|p1a: Clefable|Protect")
SLEEP_CLAUSE = "|rule|Sleep Clause Mod: Limit one foe put to sleep"


def single(moves, opponent=("Blissey", 88, 100), hp=1.0, events=(), ability="pressure", status=""):
    """Our Clefable (``status`` as the request says, e.g. ``"slp"``) vs ``opponent``."""
    me = own_mon("Clefable", moves=moves, active=True, hp=hp, ability=ability)
    if status:
        me["condition"] += f" {status}"
    return make_battle([me], [opponent], events=events)


def fails(battle, move_id: str) -> bool:
    return surely_fails(battle, Move(move_id, 9))


def test_rest_and_healing_at_full_hp_are_certain() -> None:
    assert fails(single(("rest",)), "rest") and fails(single(("recover",)), "recover")
    assert not fails(single(("rest",), hp=0.5), "rest")
    assert fails(single(("rest",), hp=0.5, status="slp"), "rest")


def test_sleep_talk_is_masked_awake_and_not_asleep() -> None:
    assert fails(single(("sleeptalk",)), "sleeptalk")
    assert not fails(single(("sleeptalk",), status="slp"), "sleeptalk")


def test_protect_twice_is_only_likely() -> None:
    battle = single(("protect", "moonblast"), events=PROTECTED)
    assert move_futility(battle, Move("protect", 9)).user_state  # the singles_sets flag
    assert not fails(battle, "protect")


def test_substitute_up_is_likely_too_little_hp_is_certain() -> None:
    up = single(("substitute",), events=("|-start|p1a: Clefable|Substitute",))
    assert move_futility(up, Move("substitute", 9)).futile and not fails(up, "substitute")
    assert fails(single(("substitute",), hp=0.24), "substitute")


def test_type_immunity_is_certain_once_the_target_cannot_terastallize() -> None:
    garchomp = single(("thunderwave",), opponent=("Garchomp", 77, 100))
    assert move_futility(garchomp, Move("thunderwave", 9)).type_immune
    assert not types_settled(garchomp, garchomp.opponent_active_pokemon)
    assert not fails(garchomp, "thunderwave")  # it may terastallize this turn
    flying = single(("earthquake",), events=("|-terastallize|p2a: Blissey|Flying",))
    assert fails(flying, "earthquake") and not fails(flying, "moonblast")
    # their Tera spent on an earlier Pokémon: Garchomp's types are settled
    spent = make_battle(
        [own_mon("Clefable", moves=("thunderwave",), active=True)],
        [("Blissey", 88, 100), ("Garchomp", 77, 100)],
        events=(),
    )
    spent._opponent_used_tera = True
    assert fails(spent, "thunderwave")


def test_variable_type_moves_and_type_changing_abilities_are_not_judged_by_type() -> None:
    ghost = ("|-terastallize|p2a: Blissey|Ghost",)
    assert fails(single(("bodyslam",), events=ghost), "bodyslam")
    assert not fails(single(("terablast",), events=ghost), "terablast")
    assert not fails(single(("hypervoice",), events=ghost, ability="pixilate"), "hypervoice")


def test_statused_targets_sleep_and_freeze_may_end() -> None:
    paralyzed = single(("thunderwave",), events=("|-status|p2a: Blissey|par",))
    assert fails(paralyzed, "thunderwave") and fails(paralyzed, "toxic")
    asleep = single(("toxic",), events=("|-status|p2a: Blissey|slp",))
    assert move_futility(asleep, Move("toxic", 9)).target_state
    assert not fails(asleep, "toxic")  # it may wake up before our move


def test_sleep_clause_with_a_benched_sleeper_is_certain() -> None:
    slept = (SLEEP_CLAUSE, "|-status|p2a: Snorlax|slp", "|switch|p2a: Blissey|Blissey, L88|100/100")
    battle = make_battle(
        [own_mon("Clefable", moves=("spore",), active=True)], [("Snorlax", 84, 100)], slept
    )
    assert fails(battle, "spore") and not fails(battle, "moonblast")


def test_revealed_ability_is_certain_unknown_is_not() -> None:
    levitate = single(("earthquake",), opponent=("Rotom-Wash", 86, 100))
    assert levitate.opponent_active_pokemon.ability == "levitate"  # its only ability
    assert fails(levitate, "earthquake")
    unknown = single(("surf",), opponent=("Gastrodon", 86, 100))
    assert move_futility(unknown, Move("surf", 9)).ability_risk > 0
    assert not fails(unknown, "surf")
    revealed = single(
        ("earthquake",),
        opponent=("Gastrodon", 86, 100),
        events=("|-ability|p2a: Gastrodon|Storm Drain",),
    )
    assert fails(revealed, "surf") and not fails(revealed, "earthquake")
    moldbreaker = single(
        ("surf",),
        opponent=("Gastrodon", 86, 100),
        events=("|-ability|p2a: Gastrodon|Storm Drain",),
        ability="moldbreaker",
    )
    assert not fails(moldbreaker, "surf")


def test_without_futile_drops_the_move_and_its_tera_order() -> None:
    battle = make_battle(
        [
            own_mon("Clefable", moves=("rest", "moonblast"), active=True),
            own_mon("Blissey", moves=("softboiled",)),
        ],
        [("Garchomp", 77, 100)],
    )
    legal = legal_actions(battle)
    assert {6, 7, 22, 23, 1} <= set(legal)  # Rest, Moonblast, with Tera, the switch
    kept = without_futile(legal, battle)
    assert set(legal) - set(kept) == {6, 22}
    assert all(kept[a] is legal[a] for a in kept)


def test_playable_actions_is_the_one_rule_for_every_seat() -> None:
    """Off: the legal actions as they are; on: less the moves that surely fail."""
    battle = make_battle(
        [own_mon("Clefable", moves=("rest", "moonblast"), active=True), own_mon("Blissey")],
        [("Garchomp", 77, 100)],
    )
    legal = legal_actions(battle)
    assert playable_actions(battle).keys() == legal.keys()
    assert playable_actions(battle, mask_futile=False).keys() == legal.keys()
    assert set(legal) - set(playable_actions(battle, mask_futile=True)) == {6, 22}


def test_all_masked_keeps_the_plain_mask() -> None:
    battle = single(("rest", "sleeptalk"))
    legal = legal_actions(battle)
    assert all(surely_fails(battle, order.order) for order in legal.values())
    assert without_futile(legal, battle) == legal
    mask = mask_from_legal(without_futile(legal, battle), 26)
    assert (mask == mask_from_legal(legal, 26)).all()


@pytest.mark.parametrize("move_id", ["recharge", "struggle"])
def test_moves_outside_the_data_are_never_masked(move_id) -> None:
    assert not fails(single(("moonblast",)), move_id)
