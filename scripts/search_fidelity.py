"""How faithfully search worlds rebuild real battles: over mid-battle decisions of direct
battles, the world built from the agent's view *given the true opponent team* is compared
with the simulator's own battle on every tracked field (mapleenv/js/search/fields.js).

    python scripts/search_fidelity.py --states 200 --opponent heuristic

Prints one JSON line: states, fields compared, the match rate, and the fields that differ
most often (by kind: ``me.*.pp`` is any own Pokémon's PP).
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import Counter

from mapleenv.actions import legal_actions
from mapleenv.env import PokemonEnv
from mapleenv.search import SearchHost
from mapleenv.search.fidelity import check_decision, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=200, help="decisions to check")
    parser.add_argument("--opponent", default="heuristic", help="the other seat's player")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--min-turn", type=int, default=2)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    env = PokemonEnv("gen9randombattle", opponent=args.opponent, backend="direct", seed=args.seed)
    host = SearchHost()
    tracked, differing, states, episode = 0, Counter(), 0, 0
    try:
        while states < args.states:
            env.reset(seed=args.seed + episode)
            episode += 1
            while states < args.states:
                battle = env.battle
                legal = legal_actions(battle)
                if battle.turn >= args.min_turn and not (battle.last_request or {}).get(
                    "forceSwitch"
                ):
                    fields, wrong = check_decision(env, host)
                    tracked += fields
                    differing.update(re.sub(r"^(me|foe)\.[^.]+\.", r"\1.*.", k) for k in wrong)
                    states += 1
                _, _, terminated, truncated, _ = env.step(rng.choice(list(legal)))
                if terminated or truncated:
                    break
    finally:
        env.close()
        host.close()
    print(json.dumps({"states": states, "battles": episode, **summary(tracked, differing)}))


if __name__ == "__main__":
    main()
