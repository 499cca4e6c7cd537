"""A run's evaluations during training play its game on its servers, with its limits (the
turn and time caps), and none of its training-only settings (opponent, teacher, search
teacher): :func:`trainer.evaluation.periodic.evaluation_view`."""

from __future__ import annotations

from mapleenv.spec import EnvSpec
from trainer.evaluation.periodic import evaluation_view


def test_evaluations_keep_the_runs_game_and_limits_and_drop_its_training_settings() -> None:
    run = EnvSpec(
        battle_format="gen9randombattle",
        opponent="heuristic",
        max_turns=40,
        battle_minutes=5.0,
        mask_futile=True,
        teacher="heuristic",
        search_teacher={"share": 0.1},
    )
    view = evaluation_view(run)
    assert (view.max_turns, view.battle_minutes, view.mask_futile) == (40, 5.0, True)
    assert view.battle_format == "gen9randombattle"
    default = EnvSpec()
    assert (view.opponent, view.teacher) == (default.opponent, default.teacher)
    assert not view.search_teacher.enabled
