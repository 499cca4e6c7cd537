#!/usr/bin/env python
"""Forwards to scripts/bench/bench_train.py (run that one's ``--help``).

Kept at this path because ``bench_train.py --baseline`` runs each checkout's own
``scripts/bench_train.py``, older ones included, and the docs name it.
"""

import runpy
from pathlib import Path

if __name__ == "__main__":
    runpy.run_path(
        str(Path(__file__).resolve().parent / "bench" / "bench_train.py"), run_name="__main__"
    )
