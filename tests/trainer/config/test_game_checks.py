"""Singles vs doubles checks without a simulator (trainer/config/games.py and
mapleenv.opponents.check_policy_game): which settings and checkpoints each game refuses."""

from __future__ import annotations

import re

import pytest

from mapleenv.opponents import check_policy_game
from mapleenv.opponents.policy import policy_game
from trainer.config import ShowdownEnvConfig
from trainer.config.games import train_game_problems

DOUBLES = "gen9randomdoublesbattle"


def _env(**values) -> ShowdownEnvConfig:
    return ShowdownEnvConfig(**values)


def test_a_doubles_env_with_its_encoder_and_the_lstm_has_no_problem() -> None:
    assert train_game_problems(_env(battle_format=DOUBLES, encoder="doubles"), "lstm") == []
    assert train_game_problems(_env(encoder="rich2", mask_futile=True), "attention") == []
    doubles3 = _env(battle_format=DOUBLES, encoder="doubles3")
    assert train_game_problems(doubles3, "attention") == []
    masked = _env(battle_format=DOUBLES, encoder="doubles", mask_futile=True)
    assert train_game_problems(masked, "mlp") == []  # mask_futile judges doubles too


@pytest.mark.parametrize(
    ("values", "model", "expected"),
    [
        (
            {"battle_format": DOUBLES, "encoder": "simple"},
            "lstm",
            ["env.encoder: encoder 'simple' reads singles"],
        ),
        ({"encoder": "doubles"}, "lstm", ["env.encoder: encoder 'doubles' reads doubles"]),
        (
            {"battle_format": DOUBLES, "encoder": "doubles"},
            "attention",
            ["model=attention reads the doubles_entities encoder's tokens"],
        ),
        (
            {"battle_format": DOUBLES, "encoder": "doubles", "opponent": {"calc": 1, "random": 1}},
            "lstm",
            ["env.opponent: opponent 'calc' plays singles only"],
        ),
        (
            {"encoder": "simple"},
            "attention",
            [
                "model=attention reads the singles_sets/singles_entities encoder's tokens on "
                "'gen9randombattle', a singles format: set env.encoder=singles_sets"
            ],
        ),
        (
            {"battle_format": DOUBLES, "encoder": "rich", "teacher": "calc"},
            "attention",
            ["env.encoder", "model=attention", "env.teacher: opponent 'calc'"],
        ),
    ],
)
def test_settings_of_the_other_game_are_named(values: dict, model: str, expected: list) -> None:
    problems = train_game_problems(_env(**values), model)
    assert len(problems) == len(expected), problems
    for problem, start in zip(problems, expected, strict=True):
        assert problem.startswith(start) and "\n" not in problem, problem


@pytest.mark.parametrize(
    ("snapshot", "game"),
    [
        ({"encoder": "doubles", "policy": {"n_actions": 2209}}, "doubles"),
        ({"encoder": "rich2", "policy": {"n_actions": 26}}, "singles"),
        ({"config": {"env": {"encoder": "doubles"}}, "policy": {"n_actions": 2209}}, "doubles"),
        # an encoder not registered here (a plugin's): the action count decides
        ({"encoder": "my_plugin:Enc", "policy": {"n_actions": 2209}}, "doubles"),
        ({"encoder": "my_plugin:Enc", "policy": {"n_actions": 22}}, "singles"),
    ],
)
def test_the_game_a_snapshot_was_trained_on(snapshot: dict, game: str) -> None:
    assert policy_game(snapshot) == game


def test_a_checkpoint_of_the_other_game_is_one_line_naming_both() -> None:
    singles = {"encoder": "rich2", "policy": {"n_actions": 26}}
    doubles = {"encoder": "doubles", "policy": {"n_actions": 2209}}
    check_policy_game(singles, "gen9randombattle", "x.pt")
    check_policy_game(doubles, DOUBLES, "x.pt")
    message = (
        "x.pt is a singles policy (encoder 'rich2', 26 actions) and "
        "'gen9randomdoublesbattle' is a doubles format"
    )
    with pytest.raises(ValueError, match=re.escape(message)):
        check_policy_game(singles, DOUBLES, "x.pt")
    with pytest.raises(ValueError, match="x.pt is a doubles policy .* is a singles format"):
        check_policy_game(doubles, "gen9ou", "x.pt")


def test_the_pair_head_is_refused_on_singles_only() -> None:
    (problem,) = train_game_problems(_env(encoder="simple"), "lstm", "pair")
    assert problem.startswith("model.action_head=pair scores doubles' joint actions")
    assert train_game_problems(_env(battle_format=DOUBLES, encoder="doubles"), "lstm", "pair") == []
    assert train_game_problems(_env(encoder="simple"), "lstm", "flat") == []
