"""scripts/setup.sh run again with nothing changed: no reinstall, no pip or npm output."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STAMP = ROOT / ".venv" / ".maple-install"
SCRIPT = ROOT / "scripts" / "setup" / "install_stamp.py"


def stamp(extras: str) -> str:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), extras],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.mark.integration  # runs setup.sh on the live .venv
def test_setup_again_prints_one_line() -> None:
    # The extras of the last set-up are in its stamp; a stale stamp (pyproject.toml's
    # project metadata edited since) would rightly reinstall, which is not this test's case.
    if not STAMP.is_file():
        pytest.skip("the venv was not made by scripts/setup.sh")
    written = STAMP.read_text().strip()
    extras = written.split()[1]
    if stamp(extras) != written:
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
    assert STAMP.read_text().strip() == written


def test_stamp_ignores_tool_settings(tmp_path: Path) -> None:
    # ruff/pytest/import-linter edits reinstall nothing; project metadata edits do
    spec = importlib.util.spec_from_file_location("install_stamp", SCRIPT)
    assert spec is not None and spec.loader is not None
    install_stamp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(install_stamp)
    base = (ROOT / "pyproject.toml").read_text()
    variants = {
        "same": base,
        "tool": base + "\n[tool.extra_linter]\nline = 1\n",
        "project": base.replace('version = "0.1.0"', 'version = "0.1.1"'),
    }
    stamps = {}
    for name, text in variants.items():
        path = tmp_path / f"{name}.toml"
        path.write_text(text)
        stamps[name] = install_stamp.stamp("dev", path)
    assert stamps["same"] == stamps["tool"] == install_stamp.stamp("dev")
    assert stamps["project"] != stamps["same"]
