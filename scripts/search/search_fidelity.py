"""How faithfully search worlds rebuild real battles: over mid-battle decisions of direct
battles, the world built from the agent's view *given the true opponent team* is compared
with the simulator's own battle on every tracked field (mapleenv/js/search/fields.js).

    python scripts/search/search_fidelity.py --states 200 --opponent heuristic

Prints one JSON line: states, fields compared, the match rate, and the fields that differ
most often (by kind: ``me.*.pp`` is any own Pokémon's PP).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from mapleenv.env import PokemonEnv
from mapleenv.search.fidelity import measure

sys.path.append(str(Path(__file__).resolve().parents[1]))  # scripts/: the shared _cli (last)
from _cli import print_json, script_parser  # noqa: E402


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument("--states", type=int, default=200, help="decisions to check")
    parser.add_argument("--opponent", default="heuristic", help="the other seat's player")
    parser.add_argument("--seed", type=int, default=0, help="battle and action seed")
    parser.add_argument("--min-turn", type=int, default=2, help="first turn checked")
    args = parser.parse_args()
    random.seed(args.seed)  # poke-env's random player draws from the global RNG
    env = PokemonEnv("gen9randombattle", opponent=args.opponent, backend="direct", seed=args.seed)
    try:
        print_json(measure(env, args.states, args.seed, args.min_turn))
    finally:
        env.close()


if __name__ == "__main__":
    main()
