"""What every script's command line shares, so each script holds only its own job.

``script_parser(__doc__)``: a parser whose ``--help`` shows the script's whole docstring as
written (its first paragraph is the summary; tests/scripts/test_scripts_help.py checks it).
``print_json(result)``: the result on stdout as JSON (one line unless ``indent``), flushed,
the form benchmarks report in (docs/benchmarks.md).

A script in a job folder (scripts/bench/, scripts/report/, ...) finds this module with
``sys.path.append(<scripts/>)`` before ``from _cli import ...``: appended, not put first, so
the folder's own modules come first; ``scripts/bench_train.py`` (at the top, where
``bench_train.py --baseline`` runs older checkouts' copy) is found the same way by
scripts/bench/_gpu_sim.py, also in spawned workers, which inherit sys.path. The packages never
import this module.
"""

from __future__ import annotations

import argparse
import json
from typing import Any


def script_parser(doc: str | None) -> argparse.ArgumentParser:
    """A parser described by ``doc`` (the script's ``__doc__``), kept as written in ``--help``."""
    return argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )


def print_json(result: Any, *, indent: int | None = None) -> None:
    """Print ``result`` as JSON on stdout and flush (a reader sees each line as it comes)."""
    print(json.dumps(result, indent=indent), flush=True)
