"""Every script in scripts/ and its job folders has a complete ``--help``: a description that
ends its sentence and a help line for every argument (read from the script's own parser).
Modules named ``_*.py`` (the shared ``scripts/_cli.py``) are helpers, not scripts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from warm_cli import run_python

SCRIPTS_DIR = Path(__file__).resolve().parents[2] / "scripts"
SCRIPTS = sorted(p for p in SCRIPTS_DIR.rglob("*.py") if not p.name.startswith("_"))

# Runs a script up to its parse_args, then reports its parser instead of parsing: its
# description, the arguments without help, and the text ``--help`` prints (argparse's
# print_help writes format_help), one process per script.
REPORT_PARSER = """
import argparse, json, os, runpy, sys

def report(self, *args, **kwargs):
    undescribed = [a.dest for a in self._actions if not a.help]
    print(json.dumps({"description": self.description or "", "undescribed": undescribed,
                      "help": self.format_help()}))
    raise SystemExit(0)

argparse.ArgumentParser.parse_args = report
script = sys.argv[1]
sys.argv = [script]
sys.path.insert(0, os.path.dirname(script))  # as when run as a script
runpy.run_path(script, run_name="__main__")
"""


def test_scripts_are_found_in_their_job_folders() -> None:
    found = {str(p.relative_to(SCRIPTS_DIR)) for p in SCRIPTS}
    assert {"bench/bench_env.py", "report/plot_metrics.py", "stress/chaos.py"} <= found


@pytest.mark.integration
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(SCRIPTS_DIR)))
def test_script_help_is_complete(script: Path) -> None:
    proc = run_python(
        [sys.executable, "-c", REPORT_PARSER, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    parser = json.loads(proc.stdout.strip().splitlines()[-1])
    help_text = parser["help"]
    assert help_text.startswith("usage: ")
    assert parser["undescribed"] == [], f"{script.name}: arguments without help"
    summary = parser["description"].strip().split("\n\n")[0]
    assert summary.endswith((".", ")")), f"{script.name}: description cut: {summary!r}"
    # the --help output shows the description's first paragraph whole
    assert " ".join(summary.split()) in " ".join(help_text.split())


@pytest.mark.integration
def test_help_is_a_command_that_exits_0() -> None:
    """``--help`` itself, end to end, on one script (the others' text is read above)."""
    script = SCRIPTS_DIR / "report" / "plot_metrics.py"
    proc = run_python(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and proc.stdout.startswith("usage: "), proc.stderr[-2000:]
