"""Checkpoints built to exhaust memory or break messages (issue 34, docs/security.md): a
stride-0 network, a deflate bomb, a spec of 1 GB, fields of the wrong type, values nested
10,000 deep or millions long are each one short line (< 4 KB) naming the file, from the
loader and from every CLI that reads a checkpoint (exit code 2, no traceback, no run dir,
peak memory well under twice a normal evaluation's). Legitimate checkpoints load as before."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch
from builders import write_tiny_checkpoint
from hostile_files import HOSTILE, build
from warm_cli import run_python

from mapleenv.opponents import make_opponent
from mapleenv.policies import CheckpointError, load_checkpoint, read_snapshot
from mapleenv.policies.bounds import brief
from trainer.checkpoint import save_checkpoint

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ROOT / "models" / "attention_ppo_gen9random.pt"
MAX_LINE = 4096
MAX_RSS_MB = 800  # a normal evaluation peaks at ~0.4 GB: twice that, at most


@pytest.mark.parametrize("name", list(HOSTILE))
def test_each_hostile_file_is_one_short_line_from_every_loader(name: str, tmp_path: Path):
    path = build(name, tmp_path)
    fragment = HOSTILE[name][1]
    for load in (read_snapshot, lambda p: make_opponent(f"policy:{p}")):
        with pytest.raises(CheckpointError) as info:
            load(path)
        message = str(info.value)
        assert "\n" not in message and len(message) < MAX_LINE, message[:500]
        assert str(path) in message and fragment in message, message[:500]


def test_legitimate_checkpoints_load_as_before(tmp_path: Path):
    shipped = read_snapshot(SHIPPED)
    assert shipped["policy"]["model"]["kind"] == "attention" and shipped["mask_futile"] is True
    tiny = load_checkpoint(write_tiny_checkpoint(tmp_path / "tiny.pt"))
    assert tiny["config"]["env"]["encoder"] == "simple"
    # a policy-only export (no counters, no config) and a run's plain counters are fine
    torch.save(
        {"format_version": 2, "policy": tiny["policy"], "model": tiny["model"]}, tmp_path / "p.pt"
    )
    assert read_snapshot(tmp_path / "p.pt")["policy"] == tiny["policy"]


def test_the_parameter_bound_is_a_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = write_tiny_checkpoint(tmp_path / "tiny.pt")
    monkeypatch.setenv("MAPLE_MAX_PARAMETERS", "1000")
    with pytest.raises(CheckpointError, match=r"more than the 1000 allowed \(MAPLE_MAX_PARAMETERS"):
        read_snapshot(path)
    monkeypatch.setenv("MAPLE_MAX_PARAMETERS", str(10**9))
    read_snapshot(path)


def test_brief_is_short_for_any_value():
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    for value in (deep, "x" * 10**7, list(range(10**6)), 10**5000, {i: i for i in range(10**5)}):
        assert len(brief(value)) <= 400


def test_a_shared_storage_is_refused(tmp_path: Path):
    ckpt = load_checkpoint(write_tiny_checkpoint(tmp_path / "tiny.pt"))
    weight = ckpt["model"]["trunk.encoder.0.weight"]
    ckpt["optimizer"] = {"copies": [weight] * 1000}  # one storage, 1000 tensors
    torch.save(ckpt, tmp_path / "shared.pt")
    with pytest.raises(CheckpointError, match="on one storage: a storage used twice"):
        load_checkpoint(tmp_path / "shared.pt")


def test_contiguous_views_that_do_not_overlap_load(tmp_path: Path):
    """cuDNN's flat LSTM weights (older GPU runs' files): parameters as views into one
    buffer, each at its own offset. Maple's writer now copies views into storages of their
    own; such files still load."""
    ckpt = load_checkpoint(write_tiny_checkpoint(tmp_path / "tiny.pt"))
    flat = torch.cat([w.reshape(-1) for w in ckpt["model"].values()])
    offset = 0
    for key, weight in ckpt["model"].items():
        ckpt["model"][key] = flat[offset : offset + weight.numel()].view(weight.shape)
        offset += weight.numel()
    torch.save(ckpt, tmp_path / "flat.pt")
    assert read_snapshot(tmp_path / "flat.pt")["model"].keys() == ckpt["model"].keys()
    ckpt.pop("format_version")
    copied = load_checkpoint(save_checkpoint(tmp_path / "copied.pt", ckpt))["model"]
    for weight in copied.values():  # written back: each at offset 0 of its own storage
        assert weight.storage_offset() == 0
        assert weight.untyped_storage().nbytes() == weight.numel() * weight.element_size()


def _cli(tmp_path: Path, *args: str) -> tuple[int, str, int]:
    """``python -m <args>`` (run dir under ``tmp_path/run``): exit code, output, peak RSS
    in MB."""
    proc = run_python(
        [sys.executable, "-m", *args],
        cwd=tmp_path,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return proc.returncode, proc.stdout + proc.stderr, proc.maxrss_kb // 1024


def _commands(path: Path, good: Path, run: Path) -> dict[str, list[str]]:
    hydra = f"hydra.run.dir={run}"
    return {
        "checkpoint": ["trainer.evaluate", f"checkpoint={path}", "battles=2", "num_envs=1", hydra],
        "policy": [
            *("trainer.evaluate", f"checkpoint={good}", f"opponents=[policy:{path}]"),
            *("battles=2", "num_envs=1", hydra),
        ],
        "resume": ["trainer", "+experiment=smoke", f"resume={path}", hydra],
        "play": ["trainer.play", f"checkpoint={path}", hydra],
    }


# every hostile kind through checkpoint=; each other way in with the memory bombs and a few
CLI_CASES = [(name, "checkpoint") for name in HOSTILE] + [
    (name, cli)
    for cli in ("policy", "resume", "play")
    for name in ("stride0_weights", "deflate_bomb", "global_step_a_tensor", "hidden_size_nested")
]


@pytest.mark.integration
@pytest.mark.timeout(400)
@pytest.mark.parametrize(("name", "cli"), CLI_CASES)
def test_every_cli_refuses_it_at_start_in_one_line(name: str, cli: str, tmp_path: Path):
    path = build(name, tmp_path / "files")
    good = write_tiny_checkpoint(tmp_path / "good.pt")
    run = tmp_path / "run"
    code, out, rss_mb = _cli(tmp_path, *_commands(path, good, run)[cli])
    assert code == 2, out[-3000:]
    assert "Traceback" not in out and len(out.encode()) < MAX_LINE, out[-3000:]
    lines = out.strip().splitlines()
    assert len(lines) == 1 and "[ERROR]" in lines[0] and str(path) in lines[0], lines
    assert not run.exists()  # refused before the run dir is made
    assert rss_mb < MAX_RSS_MB, rss_mb
