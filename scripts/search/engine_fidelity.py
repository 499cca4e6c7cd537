"""Engine fidelity: poke-engine's one turn against Showdown's for the same pair of choices,
over sampled turns of real gen9randombattle battles played inside the simulator (both teams
known); prints JSON (per-mechanic agreement counts and rates, states, battles, seed).

    python scripts/search/engine_fidelity.py --seed 1 --battles 40 --every 2
"""

from __future__ import annotations

import argparse
import json
import sys

from mapleenv.search.engine.fidelity import battles, measure
from mapleenv.showdown import find_node


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1, help="battle seed")
    parser.add_argument("--battles", type=int, default=40, help="real battles played")
    parser.add_argument("--every", type=int, default=2, help="sample every N-th turn")
    parser.add_argument("--keep", type=int, default=5, help="disagreements kept a mechanic")
    args = parser.parse_args()
    if args.battles < 1 or args.every < 1:
        print("error: --battles and --every must be >= 1", file=sys.stderr)
        sys.exit(2)
    result = measure(battles(args.seed, args.battles, args.every, find_node()), keep=args.keep)
    print(json.dumps({"seed": args.seed, "every": args.every, **result}, indent=1))


if __name__ == "__main__":
    main()
