"""How well each leaf evaluation ranks positions by outcome: the shipped agent plays
direct battles; at each of its decisions the network's value and the search's hand
evaluation (``mapleenv/js/search/game.js``) of the true position are recorded, and each is
rank-correlated (Spearman) with the battle's result (+1 won, -1 lost).

    python scripts/search/search_eval_rank.py --battles 60 --opponent heuristic

With ``--horizons 3,8`` the hand evaluation after greedy playouts of so many turns is
ranked too (``mapleenv/js/search/rollout.js``, four playouts each).

Prints one JSON line: decisions, battles, the correlations overall and by phase of the
battle (turns 1-10, 11-20, 21+). Search trusts an evaluation only as far as it ranks well.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from _agent import add_agent_arguments, agent_decisions

from mapleenv.search.fidelity import dump_state

sys.path.append(str(Path(__file__).resolve().parents[1]))  # scripts/: the shared _cli (last)
from _cli import print_json, script_parser  # noqa: E402


def spearman(x: list[float], y: list[float]) -> float:
    """Spearman's rank correlation (average ranks for ties)."""

    def ranks(v: list[float]) -> np.ndarray:
        values = np.asarray(v, dtype=float)
        order = values.argsort(kind="stable")
        r = np.empty(len(values))
        r[order] = np.arange(len(values))
        for value in np.unique(values):  # ties share their mean rank
            tied = values == value
            r[tied] = r[tied].mean()
        return r

    if len(x) < 3:
        return float("nan")
    return float(np.corrcoef(ranks(x), ranks(y))[0, 1])


def play(args: argparse.Namespace) -> list[tuple]:
    """(turn, value, hand evaluation, outcome, rollout evaluations...) per agent decision."""
    outcomes: dict[int, bool] = {}
    seen = []
    for d in agent_decisions(args.checkpoint, args.opponent, args.battles, args.seed, outcomes):
        dumped = dump_state(d.env, args.horizons)
        rolled = [float(dumped["rollouts"][h]) for h in horizons(args)]
        seen.append((d.episode, d.env.battle.turn, d.value, float(dumped["eval"]), rolled))
    return [(t, v, h, 1.0 if outcomes[e] else -1.0, *r) for e, t, v, h, r in seen if e in outcomes]


def horizons(args: argparse.Namespace) -> list[str]:
    """The rollout horizons asked for, as the host keys them ("3", "8")."""
    return [h for h in args.horizons.split(",") if h]


def main() -> None:
    parser = script_parser(__doc__)
    add_agent_arguments(parser, battles=60)
    parser.add_argument(
        "--horizons",
        default="",
        help="greedy-rollout horizons in turns to score too, e.g. 3,8,500 (four playouts each)",
    )
    args = parser.parse_args()
    rows = play(args)
    report: dict = {"decisions": len(rows), "battles": args.battles, "opponent": args.opponent}
    phases = {
        "all": (0, 10**9),
        "turns 1-10": (0, 10),
        "turns 11-20": (11, 20),
        "turns 21+": (21, 10**9),
    }
    for name, (low, high) in phases.items():
        part = [r for r in rows if low <= r[0] <= high]
        outcome = [r[3] for r in part]
        report[name] = {
            "decisions": len(part),
            "value": round(spearman([r[1] for r in part], outcome), 3),
            "hand": round(spearman([r[2] for r in part], outcome), 3),
        }
        for i, h in enumerate(horizons(args)):
            rolled = [r[4 + i] for r in part]
            report[name][f"rollout {h}"] = round(spearman(rolled, outcome), 3)
    print_json(report)


if __name__ == "__main__":
    main()
