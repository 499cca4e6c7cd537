"""How well the search's opponent model covers what the opponent really does: the shipped
agent plays direct battles; at each of its mid-battle decisions a world is built from its
view (as search builds one, no peeking), and the opponent's actual choice that turn (its
first move or switch, read from the battle log) is looked up among the replies searched in
that world (``search.replies``, ``mapleenv/js/search/rollout.js``) and among all its legal
choices in the world (the ceiling: a move the world does not know cannot be searched).

    python scripts/search/search_replies.py --battles 40 --opponent heuristic

Prints one JSON line: decisions, and per kind of actual choice (``attack``, ``status``: a
status move, ``switch``) how often it was among the replies search plays (``replies``: the
best attack and the first status move kept, the rest by the greedy reading), among those the
greedy reading alone would pick (``by_damage``), among the likeliest by the policy
opponent model (``by_prior``, ``search.opponent=policy``: the agent's network in the
opponent's seat of the world), and among all legal choices of the world (``legal``).
Search can answer only the replies it plays.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from _agent import add_agent_arguments, agent_decisions
from poke_env.data import to_id_str

from mapleenv.actions import legal_actions
from mapleenv.opponent_action import CANNOT_ACT, DAMAGING, move_class, opponent_choice
from mapleenv.policies import (
    load_checkpoint,
    policy_from_snapshot,
    snapshot_encoder,
    snapshot_mask_futile,
)
from mapleenv.search import PolicyOpponentModel, SearchHost, decision_view, host_view

sys.path.append(str(Path(__file__).resolve().parents[1]))  # scripts/: the shared _cli (last)
from _cli import print_json, script_parser  # noqa: E402

RULES = ("replies", "by_damage", "by_prior")


def actual_choice(log: list, start: int, foe_role: str) -> str | None:
    """The opponent's choice in ``log[start:]`` (mapleenv.opponent_action's reading) as
    ``move:<id>``, ``switch:<species id>`` or ``cant``; None when it made none."""
    found = opponent_choice(log, start, foe_role, 9)
    if found is None:
        return None
    message, label = found
    if label == CANNOT_ACT:
        return "cant"
    if message[1] == "switch":
        return "switch:" + to_id_str(message[3].split(",")[0])
    return "move:" + to_id_str(message[3] if message[1] == "move" else message[4])


def kind_of(choice: str) -> str:
    """``attack``, ``status`` (a status move) or ``switch``."""
    if choice.startswith("switch:"):
        return "switch"
    return "attack" if move_class(choice[5:], 9) == DAMAGING else "status"


def _model(checkpoint: str) -> PolicyOpponentModel:
    """The agent's network as search's policy opponent model (``search.opponent=policy``)."""
    snapshot = load_checkpoint(checkpoint)
    policy = policy_from_snapshot(snapshot).eval()
    return PolicyOpponentModel(policy, snapshot_encoder(snapshot), snapshot_mask_futile(snapshot))


def play(args: argparse.Namespace) -> Counter:
    """Counts of (kind, where the actual choice was found) over the agent's decisions."""
    counts: Counter = Counter()
    pending = None  # the last decision's battle, where its turn's log starts, its world
    model = _model(args.checkpoint)
    with SearchHost() as host:
        host.request("warm", format="gen9randombattle")
        for d in agent_decisions(args.checkpoint, args.opponent, args.battles, args.seed, {}):
            if pending is not None:
                tally(counts, *pending)
            battle, pending = d.env.battle, None
            if battle.turn >= 1 and not (battle.last_request or {}).get("forceSwitch"):
                view = decision_view(battle, legal_actions(battle))
                seen = host_view(view)
                asked = host.request("foe_requests", view=seen, seed=d.episode, worlds=1)
                world = host.request(
                    "world",
                    view=seen,
                    seed=d.episode,
                    replies=args.replies,
                    foe_prior=model.priors(view, asked["requests"]),
                )
                pending = (battle, len(battle._replay_data), world)
        if pending is not None:
            tally(counts, *pending)
    return counts


def tally(counts: Counter, battle: Any, cursor: int, world: dict) -> None:
    """Count one decision: where the opponent's choice after ``cursor`` in ``battle``'s log
    was found among the world's replies."""
    foe_role = "p2" if battle.player_role == "p1" else "p1"
    actual = actual_choice(battle._replay_data, cursor, foe_role)
    if actual is None or actual == "cant":
        return
    kind = kind_of(actual)
    counts[(kind, "decisions")] += 1
    counts[(kind, "legal")] += actual in world["foe_names"]
    for rule in RULES:
        counts[(kind, rule)] += actual in world.get(rule, ())


def main() -> None:
    parser = script_parser(__doc__)
    add_agent_arguments(parser, battles=40)
    parser.add_argument("--replies", type=int, default=5, help="replies searched per world")
    args = parser.parse_args()
    if args.replies < 1:
        parser.error("--replies must be at least 1")
    counts = play(args)
    report: dict = {"battles": args.battles, "opponent": args.opponent, "replies": args.replies}
    for kind in ("attack", "status", "switch", "all"):
        kinds = ("attack", "status", "switch") if kind == "all" else (kind,)
        n = sum(counts[(k, "decisions")] for k in kinds)
        report[kind] = {"decisions": n}
        for where in ("legal", *RULES):
            found = sum(counts[(k, where)] for k in kinds)
            report[kind][where] = round(found / max(1, n), 3)
    print_json(report)


if __name__ == "__main__":
    main()
