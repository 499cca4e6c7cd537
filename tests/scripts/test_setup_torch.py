"""scripts/setup/torch_spec.py: what scripts/setup.sh does about torch (no torch is installed
here)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "setup" / "torch_spec.py"

_spec = importlib.util.spec_from_file_location("torch_spec", SCRIPT)
assert _spec is not None and _spec.loader is not None
torch_spec = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(torch_spec)


@pytest.mark.parametrize(
    ("spec", "installed", "requested", "action"),
    [
        # setup.sh's default (TORCH_SPEC unset) keeps whatever torch is installed ...
        ("torch==2.13.0", "2.13.0+cpu", False, "keep"),
        ("torch==2.13.0", "2.5.1+cu124", False, "keep"),
        # ... and installs it when there is none
        ("torch==2.13.0", None, False, "install"),
        ("torch", None, True, "install"),
        # an explicit TORCH_SPEC the installed torch matches: nothing to do
        ("torch==2.13.0", "2.13.0+cpu", True, "keep"),
        ("torch>=2.4,<3", "2.13.0+cpu", True, "keep"),
        ("torch==2.5.1+cu124", "2.5.1+cu124", True, "keep"),
        ("torch", "2.13.0", True, "keep"),
        ("torch", "2.13.0+cu128", True, "keep"),
        # an explicit TORCH_SPEC it does not match: replace
        ("torch==2.5.1+cu124", "2.13.0+cpu", True, "replace"),
        ("torch==2.5.1", "2.13.0+cpu", True, "replace"),
        ("torch", "2.13.0+cpu", True, "replace"),  # bare torch: the index's default build
    ],
)
def test_decide(spec: str, installed: str | None, requested: bool, action: str) -> None:
    got, message = torch_spec.decide(spec, installed, requested)
    assert got == action, message
    assert "\n" not in message


def test_decide_rejects_a_spec_that_is_not_torch() -> None:
    with pytest.raises(ValueError, match="must name torch"):
        torch_spec.decide("numpy==2.0", "2.13.0+cpu")
    with pytest.raises(ValueError, match="not a pip requirement"):
        torch_spec.decide("torch ==", "2.13.0+cpu")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.integration  # runs the script
def test_cli_prints_one_tab_separated_line_for_setup() -> None:
    out = _cli("--requested", "--installed", "2.13.0+cpu", "torch==2.5.1+cu124")
    assert out.returncode == 0
    action, message = out.stdout.rstrip("\n").split("\t")
    assert action == "replace"
    assert "2.13.0+cpu" in message and "torch==2.5.1+cu124" in message
    out = _cli("--installed", "none", "torch==2.13.0")
    assert out.stdout.split("\t")[0] == "install"


@pytest.mark.integration  # runs the script
def test_cli_reads_the_installed_torch() -> None:
    import torch

    out = _cli("--requested", f"torch=={torch.__version__}")
    assert out.returncode == 0 and out.stdout.startswith("keep\t")


@pytest.mark.integration  # runs the script
def test_cli_error_is_one_line_and_fails() -> None:
    out = _cli("--requested", "torchvision")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().startswith("error: ") and "\n" not in out.stderr.strip()


_STUB_PYTHON = """#!/usr/bin/env bash
# .venv/bin/python stand-in: records pip and compileall calls, answers torch_spec.py as if
# FAKE_TORCH
if [ "$1" = "-m" ] && { [ "$2" = "pip" ] || [ "$2" = "compileall" ]; }; then
  echo "${*:2}" >> "$PIP_LOG"; exit 0
fi
if [ "$1" = "scripts/setup/torch_spec.py" ]; then
  shift; exec "$REAL_PYTHON" scripts/setup/torch_spec.py --installed "$FAKE_TORCH" "$@"
fi
exec "$REAL_PYTHON" "$@"
"""


def _run_setup(tmp_path: Path, installed: str, torch_spec_env: str | None) -> tuple[str, list[str]]:
    """scripts/setup.sh in a copy of the repo whose .venv python records pip calls."""
    repo = tmp_path / "repo"
    (repo / "scripts" / "setup").mkdir(parents=True)
    for name in ("setup.sh", "_cli.py", "setup/torch_spec.py", "setup/install_stamp.py"):
        (repo / "scripts" / name).write_text((ROOT / "scripts" / name).read_text())
    (repo / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    (repo / "package-lock.json").write_text("{}")
    os.utime(repo / "package-lock.json", (0, 0))  # older than node_modules: no npm ci
    package = repo / "node_modules" / "pokemon-showdown"
    package.mkdir(parents=True)
    (package / "package.json").write_text('{"version": "0.0.0-test"}')
    (repo / "node_modules" / ".package-lock.json").write_text("{}")
    bin_dir = repo / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text(_STUB_PYTHON)
    (bin_dir / "python").chmod(0o755)
    (bin_dir / "activate").write_text(f'PATH="{bin_dir}:$PATH"\n')
    log = tmp_path / "pip.log"
    log.touch()
    env = {k: v for k, v in os.environ.items() if k not in ("TORCH_SPEC", "VIRTUAL_ENV")}
    env.update(PIP_LOG=str(log), REAL_PYTHON=sys.executable, FAKE_TORCH=installed)
    if torch_spec_env is not None:
        env["TORCH_SPEC"] = torch_spec_env
    out = subprocess.run(
        ["bash", str(repo / "scripts" / "setup.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout, log.read_text().splitlines()


@pytest.mark.integration  # runs setup.sh
def test_setup_replaces_a_torch_that_does_not_match_the_requested_spec(tmp_path: Path) -> None:
    stdout, pip = _run_setup(tmp_path, "2.13.0+cpu", "torch==2.5.1+cu124")
    torch_lines = [line for line in stdout.splitlines() if "torch" in line]
    assert torch_lines == ["maple: replacing torch 2.13.0+cpu with torch==2.5.1+cu124 (TORCH_SPEC)"]
    assert "pip uninstall -q -y torch" in pip
    assert "pip install -q --no-compile torch==2.5.1+cu124" in pip
    _compiled_once_at_the_end(pip)


@pytest.mark.parametrize("torch_spec_env", [None, "torch==2.13.0"])
@pytest.mark.integration  # runs setup.sh
def test_setup_is_quiet_and_keeps_a_matching_torch(
    tmp_path: Path, torch_spec_env: str | None
) -> None:
    stdout, pip = _run_setup(tmp_path, "2.13.0+cpu", torch_spec_env)
    assert not [line for line in stdout.splitlines() if "torch" in line]
    assert not [call for call in pip if "torch" in call]
    assert any(call.startswith("pip install -q --no-compile -e .[") for call in pip)
    _compiled_once_at_the_end(pip)


@pytest.mark.integration  # runs setup.sh
def test_setup_installs_the_default_torch_when_there_is_none(tmp_path: Path) -> None:
    stdout, pip = _run_setup(tmp_path, "none", None)
    assert "maple: installing torch==2.13.0 (no torch installed)" in stdout.splitlines()
    assert "pip install -q --no-compile torch==2.13.0" in pip
    _compiled_once_at_the_end(pip)


def _compiled_once_at_the_end(calls: list[str]) -> None:
    """pip installs without compiling; Maple's modules and the venv's packages are compiled
    once, on every core, after the last install."""
    compiles = [i for i, call in enumerate(calls) if call.startswith("compileall ")]
    assert compiles == [len(calls) - 1], calls
    assert calls[-1].startswith("compileall -q -j 0 mapleenv trainer scripts ")
    assert calls[-1].endswith("site-packages")
    installs = [c for c in calls if c.startswith("pip install") and "--upgrade pip" not in c]
    assert installs and all("--no-compile" in call for call in installs)
