"""``resume=<run dir or checkpoint>`` from the CLI writes into the resumed run dir only: no
second Hydra run dir, the segment's log appended to the run's log, the first segment's
Hydra files kept (CartPole: no simulator needed)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from warm_cli import run_python

TINY = [
    "+experiment=cartpole_lstm",
    "env.num_envs=2",
    "algo.rollout_steps=16",
    "algo.epochs=1",
    "checkpoint_every=1",
]


def train(cwd: Path, *overrides: str) -> str:
    proc = run_python(
        [sys.executable, "-m", "trainer", *TINY, *overrides],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    return out


def run_dirs(cwd: Path) -> list[Path]:
    return sorted(p for p in (cwd / "outputs").glob("*/*") if p.is_dir())


@pytest.mark.integration
@pytest.mark.timeout(600)
def test_resume_writes_into_the_resumed_run_dir_only(tmp_path: Path) -> None:
    train(tmp_path, "total_steps=32")
    [run] = run_dirs(tmp_path)
    first_overrides = (run / ".hydra" / "overrides.yaml").read_text()

    train(tmp_path, "total_steps=64", f"resume={run}")
    # a checkpoint file names its run dir too (a relative path, from the cwd)
    checkpoint = (run / "checkpoints" / "last.pt").relative_to(tmp_path)
    train(tmp_path, "total_steps=96", f"resume={checkpoint}")

    assert run_dirs(tmp_path) == [run]  # no stray outputs/<date>/<time>_<name>/
    log = (run / "__main__.log").read_text()
    done = re.findall(r" - done: (\d+) steps .*; checkpoint (\S+)$", log, re.MULTILINE)
    assert done == [(str(steps), str(run / "checkpoints" / "last.pt")) for steps in (32, 64, 96)]
    assert (run / ".hydra" / "overrides.yaml").read_text() == first_overrides
    resumed = sorted((run / ".hydra").glob("resumed_*/overrides.yaml"))
    assert len(resumed) == 2
    assert all("resume=" in path.read_text() for path in resumed)
