"""Futile-move flags (encoders/features/futility.py) on battles built from protocol lines."""

from __future__ import annotations

import pytest
from builders import make_battle, own_mon
from poke_env.battle import Move

from mapleenv.encoders.features.futility import Futility, move_futility


def flags(battle, move_id: str, abilities=None) -> Futility:
    return move_futility(battle, Move(move_id, 9), abilities)


def single(moves, opponent=("Blissey", 88, 100), hp=1.0, events=(), ability="pressure", status=""):
    """Our Clefable (``status`` e.g. ``"slp"``, as the request says) vs ``opponent``."""
    me = own_mon("Clefable", moves=moves, active=True, hp=hp, ability=ability)
    if status:
        me["condition"] += f" {status}"
    return make_battle([me], [opponent], events=events)


def test_sleep_talk_is_futile_awake_and_not_asleep() -> None:
    awake = single(("sleeptalk",))
    assert flags(awake, "sleeptalk").user_state and flags(awake, "snore").futile
    asleep = single(("sleeptalk",), status="slp")
    assert not flags(asleep, "sleeptalk").futile


@pytest.mark.parametrize(
    ("hp", "events", "futile"),
    [
        (1.0, (), False),
        (0.3, (), False),
        (0.24, (), True),  # the simulator fails Substitute at HP <= max / 4
        (1.0, ("|-start|p1a: Clefable|Substitute",), True),
    ],
)
def test_substitute_needs_hp_and_no_substitute(hp, events, futile) -> None:
    battle = single(("substitute",), hp=hp, events=events)
    assert flags(battle, "substitute").user_state is futile


def test_fake_out_only_works_on_the_first_turn_out() -> None:
    battle = single(("fakeout",))
    assert battle.active_pokemon.first_turn and not flags(battle, "fakeout").futile
    battle.end_turn(2)
    assert flags(battle, "fakeout").user_state and flags(battle, "firstimpression").futile


def test_healing_is_futile_at_full_hp_only() -> None:
    assert flags(single(("recover",)), "recover").user_state
    assert flags(single(("roost",)), "roost").futile
    assert not flags(single(("recover",), hp=0.5), "recover").futile
    assert flags(single(("rest",)), "rest").futile
    assert not flags(single(("rest",), hp=0.5), "rest").futile
    asleep = single(("rest",), hp=0.5, status="slp")
    assert flags(asleep, "rest").futile


def test_status_into_immune_types_statused_targets_and_terrain() -> None:
    garchomp = single(("thunderwave",), opponent=("Garchomp", 77, 100))
    assert flags(garchomp, "thunderwave").type_immune  # Electric vs Ground
    assert not flags(garchomp, "toxic").futile
    skarmory = single(("toxic",), opponent=("Skarmory", 83, 100))
    assert flags(skarmory, "toxic").target_state  # Steel cannot be poisoned
    assert not flags(skarmory, "thunderwave").futile
    burned = single(("willowisp",), events=("|-status|p2a: Blissey|brn",))
    assert flags(burned, "willowisp").target_state and flags(burned, "toxic").target_state
    assert flags(single(("spore",), opponent=("Amoonguss", 83, 100)), "spore").type_immune
    misty = single(("toxic",), events=("|-fieldstart|move: Misty Terrain",))
    assert flags(misty, "toxic").target_state
    safeguard = single(("toxic",), events=("|-sidestart|p2: them|Safeguard",))
    assert flags(safeguard, "toxic").target_state
    behind_sub = single(("toxic",), events=("|-start|p2a: Blissey|Substitute",))
    assert flags(behind_sub, "toxic").target_state and not flags(behind_sub, "boomburst").futile


def test_hazards_at_max_layers_and_screens_already_up() -> None:
    spikes = ("|-sidestart|p2: them|Spikes",)
    assert not flags(single(("spikes",), events=spikes * 2), "spikes").futile
    assert flags(single(("spikes",), events=spikes * 3), "spikes").user_state
    rocks = single(("stealthrock",), events=("|-sidestart|p2: them|move: Stealth Rock",))
    assert flags(rocks, "stealthrock").user_state
    assert not flags(single(("stealthrock",)), "stealthrock").futile
    reflect = single(("reflect",), events=("|-sidestart|p1: me|Reflect",))
    assert flags(reflect, "reflect").user_state and not flags(reflect, "lightscreen").futile
    assert flags(single(("auroraveil",)), "auroraveil").user_state  # no snow


def test_ability_immunities_known_possible_and_mold_breaker() -> None:
    levitate = ("|-ability|p2a: Bronzong|Levitate",)
    known = single(("earthquake",), opponent=("Bronzong", 88, 100), events=levitate)
    assert flags(known, "earthquake").ability_immune
    assert not flags(known, "earthquake").type_immune
    unknown = single(("earthquake",), opponent=("Bronzong", 88, 100))
    result = flags(unknown, "earthquake")
    assert not result.futile and result.ability_risk == pytest.approx(1 / 3)
    assert flags(unknown, "earthquake", ["levitate"]).ability_risk == 1.0
    breaker = single(
        ("earthquake",), opponent=("Bronzong", 88, 100), events=levitate, ability="moldbreaker"
    )
    assert not flags(breaker, "earthquake").futile
    # Gholdengo's only ability, Good as Gold, blocks status moves, not attacks
    gholdengo = single(("thunderwave",), opponent=("Gholdengo", 77, 100))
    assert flags(gholdengo, "thunderwave").ability_immune
    assert not flags(gholdengo, "moonblast").futile
    water = single(
        ("surf",), opponent=("Vaporeon", 84, 100), events=("|-ability|p2a: Vaporeon|Water Absorb",)
    )
    assert flags(water, "surf").ability_immune and flags(water, "scald").futile


def test_damaging_moves_into_type_immunities() -> None:
    assert flags(single(("shadowball",)), "shadowball").type_immune  # Ghost vs Normal
    assert flags(single(("earthquake",), opponent=("Corviknight", 79, 100)), "earthquake").futile
    assert not flags(
        single(("thousandarrows",), opponent=("Corviknight", 79, 100)), "thousandarrows"
    ).futile
    assert not flags(single(("moonblast",)), "moonblast").futile


def test_sucker_punch_is_a_risk_not_a_failure() -> None:
    result = flags(single(("suckerpunch",)), "suckerpunch")
    assert result.needs_target_attack and not result.futile
    assert result.vector() == [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]


@pytest.mark.parametrize("move_id", ["synthesis", "moonlight", "shoreup", "slackoff", "wish"])
def test_every_self_heal_is_futile_at_full_hp(move_id) -> None:
    assert flags(single((move_id,)), move_id).user_state
    assert not flags(single((move_id,), hp=0.6), move_id).futile


SLEEP_CLAUSE = "|rule|Sleep Clause Mod: Limit one foe put to sleep"


@pytest.mark.parametrize(
    ("events", "futile"),
    [
        ((SLEEP_CLAUSE,), False),  # nobody sleeps
        ((SLEEP_CLAUSE, "|-status|p2a: Snorlax|slp|[from] move: Sleep Powder"), True),
        (
            (
                SLEEP_CLAUSE,
                "|-status|p2a: Snorlax|slp|[from] ability: Effect Spore|[of] p1a: Clefable",
            ),
            True,
        ),
        ((SLEEP_CLAUSE, "|-status|p2a: Snorlax|slp|[from] move: Rest"), False),  # self-inflicted
        (("|-status|p2a: Snorlax|slp|[from] move: Spore",), False),  # format without the clause
        ((SLEEP_CLAUSE, "|-status|p2a: Snorlax|slp", "|faint|p2a: Snorlax"), False),
    ],
)
def test_sleep_clause_fails_sleep_moves_while_a_foe_sleeps(events, futile) -> None:
    battle = make_battle(
        [own_mon("Clefable", moves=("spore",), active=True)],
        [("Snorlax", 84, 100), ("Blissey", 88, 100)],
        events=events,
    )
    assert battle.opponent_active_pokemon.species == "blissey"
    assert flags(battle, "spore").target_state is futile
    assert flags(battle, "hypnosis").target_state is futile
    assert not flags(battle, "thunderwave").futile  # the clause is about sleep only


def test_sleep_clause_counts_the_latest_sleep_only() -> None:
    slept = "|-status|p2a: Snorlax|slp|[from] move: Spore"
    woke = "|-curestatus|p2a: Snorlax|slp|[msg]"
    rested = "|-status|p2a: Snorlax|slp|[from] move: Rest"
    battle = make_battle(
        [own_mon("Clefable", moves=("spore",), active=True)],
        [("Snorlax", 84, 100), ("Blissey", 88, 100)],
        events=(SLEEP_CLAUSE, slept, woke, rested),
    )
    assert not flags(battle, "spore").futile


def encore_battle(events=(), ability="pressure", opponent=("Blissey", 88, 100)):
    return single(("encore",), opponent=opponent, events=events, ability=ability)


def test_encore_fails_before_the_target_moved_only_if_we_move_first() -> None:
    # Blissey (L88) outspeeds our Clefable (L80): it moves first, Encore can work
    assert not flags(encore_battle(), "encore").futile
    assert flags(encore_battle(ability="prankster"), "encore").target_state
    slow = encore_battle(opponent=("Snorlax", 84, 100))  # Snorlax is slower
    assert flags(slow, "encore").target_state
    trick_room = encore_battle(
        opponent=("Snorlax", 84, 100), events=("|-fieldstart|move: Trick Room",)
    )
    assert not flags(trick_room, "encore").futile


def test_encore_needs_an_encorable_last_move() -> None:
    used = ("|move|p2a: Blissey|Soft-Boiled|p2a: Blissey",)
    assert not flags(encore_battle(used, ability="prankster"), "encore").futile
    talk = ("|move|p2a: Blissey|Sleep Talk|p2a: Blissey",)
    assert flags(encore_battle(talk), "encore").target_state
    encored = (*used, "|-start|p2a: Blissey|Encore")
    assert flags(encore_battle(encored), "encore").target_state
    switched = (*used, "|switch|p2a: Snorlax|Snorlax, L84|100/100")
    battle = encore_battle(switched, ability="prankster")
    assert battle.opponent_active_pokemon.species == "snorlax"
    assert flags(battle, "encore").target_state  # Snorlax has not moved since it came in


def test_strength_sap_fails_at_minus_six_attack() -> None:
    five = single(("strengthsap",), events=("|-unboost|p2a: Blissey|atk|5",))
    assert not flags(five, "strengthsap").futile
    six = single(("strengthsap",), events=("|-unboost|p2a: Blissey|atk|6",))
    assert flags(six, "strengthsap").target_state


def test_protect_right_after_a_successful_protect_counts_as_failing() -> None:
    protected = ("|move|p1a: Clefable|Protect|p1a: Clefable", "|-singleturn|p1a: Clefable|Protect")
    battle = single(("protect", "moonblast"), events=protected)
    assert flags(battle, "protect").user_state and flags(battle, "kingsshield").user_state
    assert not flags(battle, "moonblast").futile
    attacked = (*protected, "|move|p1a: Clefable|Moonblast|p2a: Blissey")
    assert not flags(single(("protect", "moonblast"), events=attacked), "protect").futile
    failed = ("|move|p1a: Clefable|Protect|p1a: Clefable|[still]", "|-fail|p1a: Clefable")
    assert not flags(single(("protect",), events=failed), "protect").futile
    assert not flags(single(("protect",)), "protect").futile


def test_prankster_status_moves_into_dark_types_and_psychic_terrain() -> None:
    umbreon = single(("thunderwave",), opponent=("Umbreon", 84, 100), ability="prankster")
    assert flags(umbreon, "thunderwave").type_immune
    assert not flags(umbreon, "moonblast").futile
    assert not flags(single(("thunderwave",), opponent=("Umbreon", 84, 100)), "thunderwave").futile
    terrain = ("|-fieldstart|move: Psychic Terrain",)
    prankster = single(("thunderwave",), events=terrain, ability="prankster")
    assert flags(prankster, "thunderwave").target_state
    assert not flags(single(("thunderwave",), events=terrain), "thunderwave").futile


def attacker(ability: str, moves=("hypervoice",), opponent=("Gengar", 81, 100), events=()):
    """Our ``ability`` Sylveon using ``moves`` against ``opponent``."""
    me = own_mon("Sylveon", moves=moves, active=True, ability=ability)
    return make_battle([me], [opponent], events=events)


def test_type_immunity_is_judged_by_the_type_our_ability_gives() -> None:
    assert flags(attacker("cutecharm"), "hypervoice").type_immune  # Normal vs Ghost
    assert not flags(attacker("pixilate"), "hypervoice").futile  # Fairy
    assert not flags(attacker("liquidvoice"), "hypervoice").futile  # sound: Water
    assert flags(attacker("liquidvoice"), "bodyslam").type_immune  # not sound: Normal
    normalize = attacker("normalize", opponent=("Blissey", 88, 100))
    assert not flags(normalize, "shadowball").futile  # Normal vs Normal
    assert flags(attacker("normalize"), "moonblast").type_immune  # Normal vs Ghost
    garchomp = ("Garchomp", 77, 100)
    assert flags(attacker("galvanize", opponent=garchomp), "hypervoice").type_immune
    assert not flags(attacker("normalize", opponent=garchomp), "thunderwave").futile
    water = ("|-ability|p2a: Vaporeon|Water Absorb",)
    vaporeon = attacker("liquidvoice", opponent=("Vaporeon", 84, 100), events=water)
    assert flags(vaporeon, "hypervoice").ability_immune


def test_variable_type_moves_are_judged_only_when_their_type_is_known() -> None:
    assert not flags(attacker("cutecharm", moves=("terablast",)), "terablast").futile
    ghost = attacker("cutecharm", moves=("terablast",), opponent=("Blissey", 88, 100))
    ghost.parse_message(["", "-terastallize", "p1a: Sylveon", "Ghost"])
    assert flags(ghost, "terablast").type_immune  # a Ghost Tera Blast vs Normal
    assert flags(ghost, "shadowball").type_immune  # the move data's own type
    assert not flags(attacker("cutecharm", moves=("weatherball",)), "weatherball").futile


def test_smack_down_grounds_a_flying_target() -> None:
    smacked = ("|-start|p2a: Corviknight|Smack Down",)
    down = single(("earthquake",), opponent=("Corviknight", 79, 100), events=smacked)
    assert not flags(down, "earthquake").futile


PSYCHIC_TERRAIN = "|-fieldstart|move: Psychic Terrain"


def test_psychic_terrain_blocks_priority_into_grounded_targets_only() -> None:
    assert flags(single(("aquajet",), events=(PSYCHIC_TERRAIN,)), "aquajet").target_state
    levitate = (PSYCHIC_TERRAIN, "|-ability|p2a: Bronzong|Levitate")
    bronzong = ("Bronzong", 88, 100)
    known = single(("aquajet",), opponent=bronzong, events=levitate)
    assert not flags(known, "aquajet").futile
    unknown = single(("aquajet",), opponent=bronzong, events=(PSYCHIC_TERRAIN,))
    assert not flags(unknown, "aquajet").target_state  # it may have Levitate
    assert flags(unknown, "aquajet", ["heatproof"]).target_state
    breaker = single(("aquajet",), opponent=bronzong, events=levitate, ability="moldbreaker")
    assert flags(breaker, "aquajet").target_state
    flying = single(("aquajet",), opponent=("Corviknight", 79, 100), events=(PSYCHIC_TERRAIN,))
    assert not flags(flying, "aquajet").futile


def test_misty_terrain_does_not_protect_a_levitating_target() -> None:
    events = ("|-fieldstart|move: Misty Terrain", "|-ability|p2a: Hydreigon|Levitate")
    hydreigon = single(("willowisp",), opponent=("Hydreigon", 80, 100), events=events)
    assert not flags(hydreigon, "willowisp").futile
