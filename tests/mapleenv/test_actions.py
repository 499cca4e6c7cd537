"""Action masks and orders, checked on recorded real battles (no server)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import RECORDED_BATTLES, replay_decisions, synthetic_battle
from poke_env.environment.singles_env import SinglesEnv
from poke_env.player.battle_order import DefaultBattleOrder

from mapleenv.actions import (
    action_mask,
    action_space_size,
    action_to_order,
    legal_actions,
    move_slots,
    order_to_action,
)


def _snapshot(battle):
    legal = legal_actions(battle)
    mask = action_mask(battle)
    illegal = int(np.flatnonzero(mask == 0)[0])
    with pytest.raises(ValueError, match="illegal action"):
        action_to_order(illegal, battle)
    return {
        "turn": battle.turn,
        "mask": mask,
        "orders": {a: o.message for a, o in legal.items()},
        "converted": {a: action_to_order(a, battle).message for a in legal},
        "roundtrip": {a: order_to_action(o, battle) for a, o in legal.items()},
        "valid": sorted(
            o.message for o in battle.valid_orders if not isinstance(o, DefaultBattleOrder)
        ),
        "poke_env_mask": np.array(SinglesEnv.get_action_mask(battle), dtype=np.int8),
        "force_switch": battle.force_switch,
        "active_alive": battle.active_pokemon is not None and not battle.active_pokemon.fainted,
        "slots": [m.id for m in move_slots(battle)],
        "available": [m.id for m in battle.available_moves],
    }


@pytest.fixture(scope="module")
def decisions():
    out = []
    for path in RECORDED_BATTLES:
        snaps, battle = replay_decisions(path, _snapshot)
        assert battle.finished
        out += snaps
    assert len(out) > 150
    return out


def test_action_space_sizes_follow_singles_env():
    assert action_space_size(9) == 26  # 6 switches + 4 moves x (plain, mega, z, max, tera)
    assert action_space_size(8) == 22
    assert action_space_size(4) == 10


def test_mask_is_exactly_the_valid_orders(decisions):
    for d in decisions:
        assert d["mask"].dtype == np.int8 and d["mask"].shape == (26,)
        assert d["mask"].sum() >= 1
        assert set(np.flatnonzero(d["mask"])) == set(d["orders"])
        assert sorted(d["orders"].values()) == d["valid"], d["turn"]
        assert d["converted"] == d["orders"]
        assert d["roundtrip"] == {a: a for a in d["orders"]}


def test_forced_switch_with_active_alive_allows_switches_only(decisions):
    pivots = [d for d in decisions if d["force_switch"] and d["active_alive"]]
    assert pivots, "recordings should contain U-turn-like forced switches"
    for d in pivots:
        assert d["orders"] and set(d["orders"]) <= set(range(6))


def test_agrees_with_singles_env_mask_where_it_can_express_the_request(decisions):
    ordinary = [d for d in decisions if set(d["available"]) <= set(d["slots"])]
    assert len(ordinary) > 150
    for d in ordinary:
        np.testing.assert_array_equal(d["mask"], d["poke_env_mask"])


def test_moves_unknown_to_the_active_pokemon_stay_reachable():
    # Copycat lets poke-env accept requested moves the Pokemon does not know; the
    # SinglesEnv mask can only offer known moves (here: slot 0), we follow the request.
    battle = synthetic_battle(
        [("Togekiss", 80, "100/100", ["copycat", "roost", "airslash"])],
        request_moves=["copycat", "thunderbolt", "icebeam"],
        opponent_messages=[["switch", "p2a: Mew", "Mew, L80", "100/100"]],
        trapped=True,
    )
    assert np.flatnonzero(SinglesEnv.get_action_mask(battle)).tolist() == [6]
    assert {a: o.message for a, o in legal_actions(battle).items()} == {
        6: "/choose move copycat",
        7: "/choose move thunderbolt",
        8: "/choose move icebeam",
    }


def test_recharge_is_move_slot_zero(decisions):
    recharge = [d for d in decisions if d["available"] == ["recharge"]]
    assert recharge, "the recharge recording should contain a Recharge-only request"
    for d in recharge:
        assert d["orders"] == {6: "/choose move 1"}  # poke-env's order for "the only move"


def test_tera_actions_offered_with_the_moves(decisions):
    tera = [d for d in decisions if any(a >= 22 for a in d["orders"])]
    assert tera
    for d in tera:
        moves = {a - 6 for a in d["orders"] if 6 <= a < 10}
        assert {a - 22 for a in d["orders"] if a >= 22} == moves
        assert all(d["orders"][a].endswith(" terastallize") for a in d["orders"] if a >= 22)


def test_no_decision_gives_action_zero_only():
    def at_decision(battle):
        return battle

    _, battle = replay_decisions(RECORDED_BATTLES[0], at_decision)
    assert battle.finished
    assert legal_actions(battle) == {}
    np.testing.assert_array_equal(action_mask(battle), np.eye(26, dtype=np.int8)[0])
    assert isinstance(action_to_order(0, battle), DefaultBattleOrder)
    with pytest.raises(ValueError):
        action_to_order(6, battle)
