"""A command refuses bad settings before it imports torch (~3 s of CPU on a 2-core box):
the config types and checks are torch-free and the apps import the training and evaluation
stacks only once the settings passed. Fresh interpreters (``subprocess``, not the suite's
warm ``run_python``, whose server has torch loaded already), read with ``-X importtime``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

CASES = [
    (["trainer", "algo.lr=abc"], "could not be converted to Float"),
    (["trainer", "+experiment=no_such_experiment"], "no_such_experiment"),
    (["trainer", "+experiment=smoke", "env.num_envs=0"], "env.num_envs must be >= 1"),
    (["trainer", "+experiment=smoke", "resume=missing_run"], "missing_run"),
    (["trainer.evaluate", "checkpoint=missing.pt"], "checkpoint not found: missing.pt"),
    (["trainer.play", "checkpoint=missing.pt"], "checkpoint not found: missing.pt"),
]


def _imported(stderr: str) -> set[str]:
    """Module names from ``-X importtime`` lines (``import time: self | total | name``)."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and line.count("|") == 2
    }


@pytest.mark.integration
@pytest.mark.parametrize(("args", "message"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_a_refused_command_never_imports_torch(tmp_path: Path, args: list[str], message: str):
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        },
    )
    errors = [line for line in proc.stderr.splitlines() if not line.startswith("import time:")]
    assert proc.returncode == 2 and len(errors) == 1 and message in errors[0], errors
    imported = _imported(proc.stderr)
    assert "hydra" in imported  # the reading works: the command got as far as Hydra
    assert "torch" not in imported
    assert list(tmp_path.iterdir()) == []  # refused before the run dir
