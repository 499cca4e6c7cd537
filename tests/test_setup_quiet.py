"""scripts/setup.sh run again with nothing changed: no reinstall, no pip or npm output."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STAMP = ROOT / ".venv" / ".maple-install"


def test_setup_again_prints_one_line() -> None:
    # The extras of the last set-up are in its stamp; a stale stamp (pyproject.toml edited
    # since) would rightly reinstall, which is not this test's case.
    if not STAMP.is_file():
        pytest.skip("the venv was not made by scripts/setup.sh")
    version, extras, digest = STAMP.read_text().split()
    pyproject = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if digest != pyproject or version != sys.version.split()[0]:
        pytest.skip("pyproject.toml or Python changed since the last set-up: run scripts/setup.sh")
    env = {k: v for k, v in os.environ.items() if k not in ("TORCH_SPEC", "VIRTUAL_ENV")}
    env["EXTRAS"] = extras
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "setup.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    output = (done.stdout + done.stderr).strip().splitlines()
    assert len(output) == 1 and output[0].startswith("maple: set up"), output
    assert STAMP.read_text().split()[2] == pyproject
