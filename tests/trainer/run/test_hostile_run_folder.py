"""A run folder someone sent you (issue 61), resumed with the real CLI: links and special
files in it are one line and exit 2 before anything is written; nothing outside it is
touched; a huge or broken ``metrics.csv`` is one line, a long honest one is streamed
(CartPole: no simulator needed). docs/security.md, "Run folders"."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from warm_cli import run_python

TINY = [
    "+experiment=cartpole_lstm",
    "env.num_envs=2",
    "algo.rollout_steps=16",
    "algo.epochs=1",
    "tensorboard=false",
]


def train(cwd: Path, *overrides: str):
    return run_python(
        [sys.executable, "-m", "trainer", *TINY, *overrides],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
    )


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cwd = tmp_path_factory.mktemp("honest")
    proc = train(cwd, "total_steps=32", "hydra.run.dir=run")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return cwd / "run"


@pytest.fixture
def sent(tmp_path: Path, finished_run: Path) -> Path:
    """A copy of the finished run, as a folder someone sent."""
    run = tmp_path / "sent"
    shutil.copytree(finished_run, run, symlinks=True)
    return run


def refused(tmp_path: Path, resume: Path | str, fragment: str) -> None:
    proc = train(tmp_path, "total_steps=64", f"resume={resume}")
    assert proc.returncode == 2 and proc.stdout == "", (proc.stdout + proc.stderr)[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], lines[:10]
    assert "Traceback" not in proc.stderr


def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim.txt"
    path.write_text("mine\n")
    return path


@pytest.mark.integration
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["config.yaml", "__main__.log", "metrics.csv"])
def test_a_linked_output_is_refused_and_its_target_untouched(
    tmp_path: Path, sent: Path, name: str
) -> None:
    target = victim(tmp_path)
    (sent / name).unlink()
    (sent / name).symlink_to(target)
    before = sorted(p.name for p in sent.rglob("*"))
    refused(tmp_path, sent, f"{sent / name} is a symbolic link")
    assert target.read_text() == "mine\n"
    assert sorted(p.name for p in sent.rglob("*")) == before  # no .hydra/resumed_*, no log


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_linked_checkpoints_folder_is_refused_and_the_other_folder_kept(
    tmp_path: Path, sent: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / ".notes.tmp").write_text("notes\n")
    (other / ".last.pt.abc.tmp").write_text("not Maple's\n")
    shutil.move(sent / "checkpoints" / "last.pt", sent / "model.pt")
    shutil.rmtree(sent / "checkpoints")
    (sent / "checkpoints").symlink_to(other, target_is_directory=True)
    refused(tmp_path, sent / "model.pt", f"{sent / 'checkpoints'} is a symbolic link")
    assert sorted(p.name for p in other.iterdir()) == [".last.pt.abc.tmp", ".notes.tmp"]


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_fifo_in_the_folder_is_refused_at_once(tmp_path: Path, sent: Path) -> None:
    (sent / "metrics.csv").unlink()
    os.mkfifo(sent / "metrics.csv")  # reading it would block for ever
    refused(tmp_path, sent, "is a FIFO (named pipe)")


@pytest.mark.integration
@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"iteration,global_step\n1," + b"9" * 200_000 + b"\n", "field larger than field limit"),
        (b"iteration,global_step\n1,\xff\xfe\n", "'utf-8' codec can't decode"),
        (b"x," * 5000 + b"\n", "is not a metrics file: its header has"),
    ],
    ids=["long_field", "not_utf8", "wide_header"],
)
def test_a_broken_metrics_file_is_one_line_before_anything_is_written(
    tmp_path: Path, sent: Path, content: bytes, fragment: str
) -> None:
    (sent / "metrics.csv").write_bytes(content)
    config = (sent / "config.yaml").read_bytes()
    refused(tmp_path, sent, fragment)
    assert (sent / "config.yaml").read_bytes() == config  # not rewritten
    assert not list((sent / ".hydra").glob("resumed_*"))


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_metrics_file_over_the_cap_is_refused_without_reading_it(
    tmp_path: Path, sent: Path
) -> None:
    with (sent / "metrics.csv").open("r+b") as f:
        f.truncate(300 << 20)  # sparse: 300 MiB that cost no disk
    refused(tmp_path, sent, "a metrics.csv to resume may have at most 256 MiB")


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_long_metrics_file_is_streamed_and_only_maples_temporaries_are_cleaned(
    tmp_path: Path, sent: Path
) -> None:
    """12 MB of rows (which cost 1.2 GB when read whole) are copied row by row, the one
    past the checkpoint dropped; a temp file of someone else's stays."""
    header, *rows = (sent / "metrics.csv").read_text().splitlines()
    first = rows[0].split(",")
    kept = 0
    with (sent / "metrics.csv").open("a") as f:
        while f.tell() < 12 << 20:  # rows of the checkpoint's iteration: kept
            f.write(rows[0] + "\n")
            kept += 1
        f.write(",".join(["100", *first[1:]]) + "\n")  # past the checkpoint: dropped
    (sent / "checkpoints" / ".notes.tmp").write_text("notes\n")
    (sent / "checkpoints" / ".last.pt.dead.tmp").write_bytes(b"a killed writer's")
    proc = train(tmp_path, "total_steps=64", f"resume={sent}")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "dropped 1 row(s) past iteration 1" in proc.stderr
    lines = (sent / "metrics.csv").read_text().splitlines()
    assert lines[0] == header and len(lines) == 1 + len(rows) + kept + 1
    assert lines[-1].startswith("2,64,")
    assert (sent / "checkpoints" / ".notes.tmp").read_text() == "notes\n"
    assert not (sent / "checkpoints" / ".last.pt.dead.tmp").exists()
