"""The doubles encoder's move kinds read every move a request can offer, Recharge included
(poke-env's Recharge entry has no priority, target or flags: a KeyError crashed the doubles
env mid-battle after a Hyper Beam)."""

from __future__ import annotations

from poke_env.battle.move import Move

from mapleenv.encoders.doubles.basic import KIND_NAMES, _kind


def test_recharge_has_no_kind_and_fake_out_is_priority_and_first_turn() -> None:
    assert _kind(Move("recharge", 9)) == [0.0] * len(KIND_NAMES)
    kinds = dict(zip(KIND_NAMES, _kind(Move("fakeout", 9)), strict=True))
    assert sum(kinds.values()) == 2.0 and kinds[KIND_NAMES[2]] == 1.0
