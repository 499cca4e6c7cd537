"""trainer/__main__.py: the CLI sets OpenMP's wait policy before torch is loaded."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_PROBE = (
    "import os, sys, trainer; loaded_first = 'torch' in sys.modules; import trainer.__main__; "
    "print(loaded_first, os.environ.get('OMP_WAIT_POLICY'))"
)


def _probe(env: dict[str, str]) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.mark.parametrize(("given", "expected"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_the_cli_makes_openmp_threads_sleep_unless_told_otherwise(
    given: str | None, expected: str
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given is not None:
        env["OMP_WAIT_POLICY"] = given
    # torch (and its OpenMP runtime) must not be loaded by the package before the CLI module
    # sets the variable, or the setting would come too late to matter
    assert _probe(env) == f"False {expected}"
