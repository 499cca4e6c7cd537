"""Reward arithmetic on hand-worked cases and parity with poke-env's helper (no server)."""

from __future__ import annotations

import types

import pytest
from conftest import RECORDED_BATTLES, replay_decisions, synthetic_battle
from poke_env.environment.env import PokeEnv

from mapleenv.reward import (
    REWARDS,
    RewardConfig,
    RewardFn,
    RewardTracker,
    make_reward,
    register_reward,
    state_value,
)

SHAPED = RewardConfig(fainted_value=2.0, hp_value=1.0, status_value=0.5, victory_value=30.0)


def _battle():
    return synthetic_battle(
        [
            ("Pikachu", 50, "50/100 par", ["thunderbolt"]),
            ("Snorlax", 80, "0 fnt", ["bodyslam"]),
            ("Eevee", 50, "100/100", ["tackle"]),
        ],
        opponent_messages=[
            ["switch", "p2a: Gyarados", "Gyarados, L80", "100/100"],
            ["-damage", "p2a: Gyarados", "40/100"],
            ["-status", "p2a: Gyarados", "brn"],
        ],
    )


def test_hand_worked_state_value_and_deltas():
    battle = _battle()
    # ours: Pikachu .5 hp - .5 par; Snorlax -2 fainted; Eevee 1; 3 unseen slots +3 -> 2.0
    # theirs: Gyarados -.4 hp + .5 brn; 5 unseen slots -5 -> -4.9
    assert state_value(battle, SHAPED) == pytest.approx(-2.9)
    tracker = RewardTracker(SHAPED)
    assert tracker.compute(battle) == pytest.approx(-2.9)  # vs starting_value 0
    assert tracker.compute(battle) == pytest.approx(0.0)  # nothing changed
    battle.parse_message(["", "faint", "p2a: Gyarados"])  # -(0) + 2, status no longer counts
    assert tracker.compute(battle) == pytest.approx(1.9)
    battle.won_by("maple")
    assert tracker.compute(battle) == pytest.approx(30.0)


def test_tracker_restarts_for_a_new_battle_and_on_reset():
    tracker = RewardTracker({"hp_value": 1.0, "starting_value": -1.0})
    first = _battle()
    assert tracker.compute(first) == pytest.approx(state_value(first, tracker.config) + 1.0)
    second = _battle()
    second._battle_tag = "battle-gen9randombattle-2"
    assert tracker.compute(second) == pytest.approx(state_value(second, tracker.config) + 1.0)
    tracker.reset()
    assert tracker.compute(second) == pytest.approx(state_value(second, tracker.config) + 1.0)


def test_loss_and_default_config():
    battle = _battle()
    tracker = RewardTracker()  # +-1 for a win/loss only
    assert tracker.compute(battle) == 0.0
    battle.won_by("someone else")
    assert tracker.compute(battle) == -1.0


@pytest.mark.parametrize("path", RECORDED_BATTLES, ids=lambda p: p.name)
def test_matches_poke_env_reward_computing_helper(path):
    ours = RewardTracker(SHAPED)
    host = types.SimpleNamespace(_reward_buffer={})
    weights = dict(fainted_value=2.0, hp_value=1.0, status_value=0.5, victory_value=30.0)

    def both(battle):
        return ours.compute(battle), PokeEnv.reward_computing_helper(host, battle, **weights)

    pairs, battle = replay_decisions(path, both)
    pairs.append(both(battle))  # the final, finished state
    assert len(pairs) > 20 and any(abs(a) > 0 for a, _ in pairs)
    for a, b in pairs:
        assert a == pytest.approx(b)


def test_config_from_mapping_aliases_and_errors():
    assert RewardConfig.from_value(None) == RewardConfig()
    assert RewardConfig.from_value({"fault_value": 2}).fainted_value == 2
    assert RewardConfig.from_value(SHAPED) is SHAPED
    with pytest.raises(ValueError, match="unknown reward key 'hp'"):
        RewardConfig.from_value({"hp": 1})
    with pytest.raises(TypeError):
        RewardConfig.from_value(3)


class _Constant:
    """A custom reward: ``value`` every step (records the weights it was built with)."""

    def __init__(self, config: RewardConfig, value: float = 0.5):
        self.config, self.value = config, value

    def reset(self) -> None:
        pass

    def compute(self, battle) -> float:
        return self.value


def test_reward_registry_names_factories_and_instances(monkeypatch):
    monkeypatch.setitem(REWARDS, "constant", _Constant)
    shaped = make_reward("shaped", {"hp_value": 1.0})
    assert isinstance(shaped, RewardTracker) and shaped.config.hp_value == 1.0
    assert isinstance(make_reward(), RewardTracker)  # the default
    register_reward("constant", _Constant)
    custom = make_reward("constant", {"victory_value": 3.0})
    assert custom.compute(_battle()) == 0.5 and custom.config.victory_value == 3.0
    by_path = make_reward(f"{__name__}:_Constant")
    assert isinstance(by_path, _Constant) and by_path.config == RewardConfig()
    assert make_reward(custom) is custom
    assert isinstance(custom, RewardFn)


def test_reward_registry_errors():
    with pytest.raises(ValueError, match="unknown reward_fn 'nope'; valid: .*shaped"):
        make_reward("nope")
    with pytest.raises(TypeError, match="not a RewardFn"):
        make_reward(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown reward key 'hp'"):
        make_reward("shaped", {"hp": 1})
