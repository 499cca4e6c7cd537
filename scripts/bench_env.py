#!/usr/bin/env python
"""Forwards to scripts/bench/bench_env.py (run that one's ``--help``).

Kept at this path because docs and the simulator's ceiling notes (mapleenv/js) name it.
"""

import runpy
from pathlib import Path

if __name__ == "__main__":
    runpy.run_path(
        str(Path(__file__).resolve().parent / "bench" / "bench_env.py"), run_name="__main__"
    )
