"""Weighted opponent mixes: parsing, seeded per-battle draws, delegation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import synthetic_battle
from omegaconf import OmegaConf
from poke_env.player import MaxBasePowerPlayer, RandomPlayer

from mapleenv.opponents import make_opponent
from mapleenv.opponents.mix import (
    OpponentMix,
    mix_members,
    mix_name,
    opponent_spec,
    parse_mix,
    uses_self_play,
)


def test_parse_and_name_round_trip():
    weights = {"random": 0.1, "max_power": 0.3, "heuristic": 0.3, "self": 0.3}
    name = mix_name(weights)
    assert name == "mix:random=0.1,max_power=0.3,heuristic=0.3,self=0.3"
    assert parse_mix(name) == weights
    assert parse_mix("random=1, policy:runs/a.pt=2") == {"random": 1.0, "policy:runs/a.pt": 2.0}
    assert (
        opponent_spec(OmegaConf.to_container(OmegaConf.create({"opponent": weights}))["opponent"])
        == name
    )
    assert opponent_spec("heuristic") == "heuristic"
    assert mix_members(name) == ["random", "max_power", "heuristic", "self"]
    assert mix_members({"random": 1, "self": 0}) == ["random"]
    assert mix_members("max_power") == ["max_power"]
    assert uses_self_play(weights) and uses_self_play("self")
    assert not uses_self_play("mix:random=1,self=0") and not uses_self_play("random")


@pytest.mark.parametrize(
    "bad",
    [
        "mix:random",
        "mix:random=-1",
        "mix:random=x",
        "mix:",
        "mix:random=0",
        {"random": float("nan")},
        {},
    ],
)
def test_bad_mixes_fail_clearly(bad):
    with pytest.raises(ValueError, match="mix|weight"):
        parse_mix(bad)


def test_unknown_member_fails_when_built():
    with pytest.raises(ValueError, match="unknown opponent 'nobody'"):
        make_opponent("mix:random=1,nobody=1")
    with pytest.raises(ValueError, match="unknown opponent 'nobody'"):
        make_opponent({"random": 1, "nobody": 1})


def test_a_mapping_of_weights_builds_the_mix_its_name_does():
    weights = {"random": 1, "max_power": 3}
    mix = make_opponent(weights, seed=7)
    by_name = make_opponent(mix_name(weights), seed=7)
    assert isinstance(mix, OpponentMix)
    assert [mix.name_for(f"b{i}") for i in range(50)] == [
        by_name.name_for(f"b{i}") for i in range(50)
    ]
    with pytest.raises(TypeError, match="a name or a mapping of weights"):
        make_opponent(3)  # type: ignore[arg-type]


def test_draws_follow_the_weights():
    weights = {"random": 0.1, "max_power": 0.3, "heuristic": 0.6}
    mix = make_opponent(mix_name(weights), seed=123)
    n = 6000
    names = [mix.name_for(f"battle-{i}") for i in range(n)]
    for name, p in weights.items():
        sigma = math.sqrt(p * (1 - p) / n)
        assert abs(names.count(name) / n - p) < 4 * sigma, (name, names.count(name))
    # weights need not be normalised
    unnormalised = make_opponent("mix:random=1,max_power=3,heuristic=6", seed=123)
    assert [unnormalised.name_for(f"battle-{i}") for i in range(n)] == names


def test_one_seeded_draw_per_battle():
    def sequence(seed):
        mix = make_opponent("mix:random=1,max_power=1", seed=seed)
        return mix, [mix.name_for(f"battle-{i}") for i in range(64)]

    mix, first = sequence(7)
    assert [mix.name_for(f"battle-{i}") for i in range(60, 64)] == first[60:]  # stable per tag
    assert sequence(7)[1] == first
    assert sequence(8)[1] != first
    assert set(first) == {"random", "max_power"}


def test_mix_delegates_the_battle_to_the_drawn_member():
    mix = make_opponent("mix:random=1,max_power=1", seed=0)
    assert isinstance(mix, OpponentMix)
    assert isinstance(mix.members["random"], RandomPlayer)
    assert isinstance(mix.members["max_power"], MaxBasePowerPlayer)
    seen = set()
    for i in range(12):
        battle = synthetic_battle(
            [("Pikachu", 90, "100/100", ["thunderbolt", "quickattack", "thunder"])],
            opponent_messages=[["switch", "p2a: Mew", "Mew, L80", "100/100"]],
        )
        battle._battle_tag = f"battle-gen9randombattle-{i}"
        order = mix.choose_move(battle)
        name = mix.name_for(battle.battle_tag)
        seen.add(name)
        if name == "max_power":  # MaxBasePowerPlayer: the strongest move (Thunder, 110)
            assert order.message == "/choose move thunder"
        assert mix.members[name]._battles[battle.battle_tag] is battle
        battle._finished = True
    assert seen == {"random", "max_power"}
    # members forget finished battles (the env never resets a shared opponent)
    assert all(len(member._battles) == 1 for member in mix.members.values())


def test_zero_weight_members_are_not_built():
    mix = make_opponent("mix:random=1,heuristic=0", seed=0)
    assert list(mix.members) == ["random"]
    assert np.allclose(mix.probabilities, [1.0])
