"""``mask_futile`` in double battles: each slot's move is judged against the Pokémon its
target would hit (docs/observation.md, "Masking futile moves"). Battles built from
Showdown's own protocol lines; the real-battle test is tests/mapleenv/test_mask_futile.py."""

from __future__ import annotations

import logging

from poke_env.battle import DoubleBattle, Move

from mapleenv.encoders.features.certain import doubles_targets, fails_against


def _battle(*actives: str, foes_tera_used: bool = True) -> DoubleBattle:
    """A gen 9 double battle with ``p1a, p1b, p2a, p2b`` (an empty string: no Pokémon)."""
    battle = DoubleBattle("battle-gen9doublesou-1", "me", logging.getLogger("t"), gen=9)
    battle.player_role = "p1"
    for slot, species in zip(("p1a", "p1b", "p2a", "p2b"), actives, strict=True):
        if species:
            battle.parse_message(["", "switch", f"{slot}: {species}", f"{species}, L50", "100/100"])
    battle._opponent_used_tera = foes_tera_used  # the foes' types are settled
    return battle


def _fails(battle: DoubleBattle, move_id: str, target: int, pos: int = 0) -> bool:
    move = Move(move_id, 9)
    targets = doubles_targets(battle, pos, move, target)
    return fails_against(battle, battle.active_pokemon[pos], move, targets)


def test_a_single_target_move_is_judged_against_the_foe_it_aims_at() -> None:
    battle = _battle("Pikachu", "Snorlax", "Skarmory", "Dugtrio")
    assert _fails(battle, "thunderbolt", 2) and _fails(battle, "thunderwave", 2)
    assert not _fails(battle, "thunderbolt", 1)  # Skarmory is not immune
    # while the foes may still terastallize, no immunity is certain
    assert not _fails(
        _battle("Pikachu", "Snorlax", "Skarmory", "Dugtrio", foes_tera_used=False), "thunderbolt", 2
    )


def test_a_spread_move_is_masked_only_when_it_fails_against_both_foes() -> None:
    assert _fails(_battle("Pikachu", "Snorlax", "Diglett", "Dugtrio"), "electroweb", 0)
    assert not _fails(_battle("Pikachu", "Snorlax", "Skarmory", "Dugtrio"), "electroweb", 0)
    assert not _fails(_battle("Pikachu", "Snorlax", "Skarmory", "Dugtrio"), "outrage", 0)


def test_an_empty_slot_retargets_and_a_move_that_hits_our_ally_is_judged_by_our_state() -> None:
    both_ground = _battle("Pikachu", "Snorlax", "Diglett", "Dugtrio")
    assert not _fails(both_ground, "discharge", 0)  # Snorlax may terastallize first
    assert _fails(_battle("Pikachu", "", "Diglett", "Dugtrio"), "discharge", 0)  # no ally
    empty_foe = _battle("Pikachu", "Snorlax", "", "Dugtrio")
    assert _fails(empty_foe, "thunderbolt", 1)  # Showdown retargets it to the other foe
    assert not _fails(_battle("Pikachu", "Snorlax", "", "Skarmory"), "thunderbolt", 1)
    assert _fails(_battle("Pikachu", "Snorlax", "", "Skarmory"), "sleeptalk", 2)  # our state
