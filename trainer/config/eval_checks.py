"""The checks of an evaluation's own settings: ``trainer.evaluate``'s (its preflight and
:func:`trainer.evaluation.evaluate_policy`) and a run's evaluations during training
(``eval.*``), one function each, one-line messages."""

from __future__ import annotations

from typing import Any


def check_evaluation(opponents: list[str], battles: int, num_envs: int, where: str = "") -> None:
    """An evaluation's own counts and opponent names (``trainer.evaluate``'s preflight,
    :func:`trainer.evaluation.evaluate_policy`, ``eval.*`` of a run): a one-line
    ``ValueError`` naming the setting as ``where`` prefixes it; self-play (``self``) has no
    snapshots outside training."""
    from mapleenv.opponents import check_opponent_name, uses_self_play

    for name, value in (("battles", battles), ("num_envs", num_envs)):
        if value < 1:
            raise ValueError(f"{where}{name} must be >= 1, got {value}")
    if not opponents:
        raise ValueError(
            f"{where}opponents: none given" if where else "no opponents to evaluate against"
        )
    for name in opponents:
        try:
            check_opponent_name(name)
        except ValueError as exc:
            raise ValueError(f"{where}opponents: {exc}" if where else str(exc)) from None
        if uses_self_play(name):
            message = (
                f"opponent {name!r}: 'self' plays snapshots pushed during training; "
                "evaluate against policy:<checkpoint> instead"
            )
            raise ValueError(f"{where}opponents: {message}" if where else message)


def periodic_eval_problems(eval_cfg: Any, env_cfg: Any) -> list[str]:
    """``eval.*``, the evaluations during training, as one-line messages (empty: none)."""
    if eval_cfg.every < 0:
        return [f"eval.every must be >= 0 (0 = off), got {eval_cfg.every}"]
    if not eval_cfg.every:
        return []
    if not hasattr(env_cfg, "battle_format"):
        return ["eval.every > 0 needs Showdown envs (env=showdown)"]
    try:
        check_evaluation(list(eval_cfg.opponents), eval_cfg.battles, eval_cfg.num_envs, "eval.")
    except ValueError as exc:
        return [str(exc)]
    return []
