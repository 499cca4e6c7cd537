"""Where a searched decision's time goes: mid-battle decisions of direct battles (random
legal play) searched by one search host at each time budget; per budget the median
simulated turns per decision, the time building worlds, and the time per simulated turn.

    python scripts/search/bench_search.py --decisions 40 --budgets 100,300,1000

Prints one JSON line per budget. Measure on a quiet box; the host is warmed up first.
"""

from __future__ import annotations

import random
import statistics
import sys
from pathlib import Path

from mapleenv.actions import legal_actions
from mapleenv.env import PokemonEnv
from mapleenv.measure import machine_info
from mapleenv.search import SearchConfig, SearchHost, decision_view, host_settings, host_view

sys.path.append(str(Path(__file__).resolve().parents[1]))  # scripts/: the shared _cli (last)
from _cli import print_json, script_parser  # noqa: E402


def decisions(count: int, seed: int) -> list[dict]:
    """Views of ``count`` searchable decisions (turn 3 on, no forced switch)."""
    rng = random.Random(seed)
    env = PokemonEnv("gen9randombattle", opponent="heuristic", backend="direct", seed=seed)
    views: list[dict] = []
    try:
        episode = 0
        while len(views) < count:
            env.reset(seed=seed + episode)
            episode += 1
            while len(views) < count:
                legal = legal_actions(env.battle)
                view = decision_view(env.battle, legal)
                if env.battle.turn >= 3 and len(legal) > 1 and not view["force_switch"]:
                    views.append(view)
                _, _, terminated, truncated, _ = env.step(rng.choice(list(legal)))
                if terminated or truncated:
                    break
    finally:
        env.close()
    return views


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument("--decisions", type=int, default=40, help="decisions searched per budget")
    parser.add_argument("--budgets", default="100,300,1000", help="ms per decision")
    defaults = SearchConfig()  # search.* as evaluate and play default them
    parser.add_argument("--worlds", type=int, default=defaults.worlds, help="worlds per decision")
    parser.add_argument(
        "--max-actions", type=int, default=defaults.max_actions, help="own choices searched"
    )
    parser.add_argument("--seed", type=int, default=0, help="battle and search seeds")
    parser.add_argument(
        "--rollout-turns",
        type=int,
        default=defaults.rollout_turns,
        help="greedy turns played past each searched one",
    )
    parser.add_argument(
        "--replies",
        type=int,
        default=defaults.replies,
        help="opponent replies searched per world (0: all)",
    )
    args = parser.parse_args()
    views = decisions(args.decisions, args.seed)
    with SearchHost() as host:
        host.request("warm", format=views[0]["format"])
        for budget in [float(b) for b in args.budgets.split(",")]:
            rows = []
            for i, view in enumerate(views):
                own = list(view["choices"].values())[: args.max_actions]
                world = host_view(view)
                config = SearchConfig(
                    time_ms=budget,
                    worlds=args.worlds,
                    rollout_turns=args.rollout_turns,
                    replies=args.replies,
                )
                rows.append(
                    host.request("search", view=world, own=own, seed=i, **host_settings(config))
                )
            sim_ms = [(r["ms"] - r["build_ms"]) / r["sims"] for r in rows if r["sims"]]
            print_json(
                {
                    "budget_ms": budget,
                    "decisions": len(rows),
                    "worlds": args.worlds,
                    "rollout_turns": args.rollout_turns,
                    "replies": args.replies,
                    "median_ms": round(statistics.median(r["ms"] for r in rows), 1),
                    "median_sims": statistics.median(r["sims"] for r in rows),
                    "median_worlds_done": statistics.median(r["worlds"] for r in rows),
                    "median_build_ms": round(statistics.median(r["build_ms"] for r in rows), 1),
                    "median_ms_per_sim": round(statistics.median(sim_ms), 2),
                    "machine": machine_info(),
                }
            )


if __name__ == "__main__":
    main()
