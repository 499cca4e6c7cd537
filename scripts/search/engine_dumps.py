"""Writes tests/data/gen9randombattle-engine-dumps.json.gz: searchable decisions of real
direct-backend battles (random legal actions) with the two worlds the search host builds for
each (``dump_worlds``: the exact Showdown state, mapleenv/js/search/dump.js), for the native
engine conversion's unit tests.

    python scripts/search/engine_dumps.py
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "mapleenv" / "search"))

from test_search import mid_battle_decisions  # noqa: E402 (the tests' real-battle decisions)

from mapleenv.search import SearchHost, host_view  # noqa: E402

OUT = ROOT / "tests" / "data" / "gen9randombattle-engine-dumps.json.gz"
# (battle seed, switch-ins after a faint, first turn)
BATTLES = [(3, False, 3), (4, True, 3), (7, False, 8), (9, False, 12), (21, False, 6)]


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " ")).parse_args()
    out = []
    with SearchHost() as host:
        for seed, switch_ins, min_turn in BATTLES:
            for d in mid_battle_decisions(seed, 4, min_turn=min_turn, switch_ins=switch_ins):
                reply = host.request(
                    "dump_worlds",
                    view=host_view(d.view),
                    seed=11,
                    worlds=2,
                    own=list(d.view["choices"].values()),
                )
                out.append({"choices": d.view["choices"], "worlds": reply["worlds"]})
    with gzip.open(OUT, "wt") as f:
        json.dump(out, f)
    print(f"{len(out)} decisions -> {OUT}")


if __name__ == "__main__":
    main()
