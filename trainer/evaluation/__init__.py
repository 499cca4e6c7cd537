"""Evaluating a policy against named opponents: statistics, the battle loop, output and
the periodic evaluator. The CLI is :mod:`trainer.evaluate` (``docs/evaluation.md``)."""

from trainer.evaluation.battles import evaluate_policy, play_battles
from trainer.evaluation.output import quality_table, results_json, results_table, write_json
from trainer.evaluation.periodic import PeriodicEvaluator
from trainer.evaluation.stats import OpponentResult, wilson_interval

__all__ = [
    "OpponentResult",
    "PeriodicEvaluator",
    "evaluate_policy",
    "play_battles",
    "quality_table",
    "results_json",
    "results_table",
    "wilson_interval",
    "write_json",
]
