"""``maple-export-checkpoint`` (``python -m trainer.apps.export_checkpoint``): a compact copy
that still evaluates and resumes, and with ``--mask-futile`` plays without the moves that surely
fail (its run's config untouched)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from builders import write_tiny_checkpoint
from warm_cli import run_python

from trainer.checkpoint import load_checkpoint
from trainer.config import checkpoint_mask_futile


def export(*args: str) -> dict:
    proc = run_python(
        [sys.executable, "-m", "trainer.apps.export_checkpoint", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(proc.stdout)


@pytest.mark.integration  # runs the script
def test_mask_futile_is_set_on_the_copy_and_followed_unless_overridden(tmp_path: Path):
    source = write_tiny_checkpoint(tmp_path / "last.pt")
    trained = load_checkpoint(source)["config"]["env"].get("mask_futile", False)
    assert trained is False

    plain = export(str(source), str(tmp_path / "plain.pt"))
    masked = export(str(source), str(tmp_path / "masked.pt"), "--mask-futile", "--policy-only")
    assert plain["mask_futile"] is False and masked["mask_futile"] is True

    copy = load_checkpoint(tmp_path / "masked.pt")
    assert copy["mask_futile"] is True
    assert copy["config"]["env"].get("mask_futile", False) is False  # the run's config as it was
    original = load_checkpoint(source)["model"]
    assert all(torch.equal(copy["model"][k], original[k]) for k in original)
    assert checkpoint_mask_futile(None, copy) is True  # evaluate's and play's default
    assert checkpoint_mask_futile(False, copy) is False  # mask_futile=false still wins
    assert checkpoint_mask_futile(None, load_checkpoint(tmp_path / "plain.pt")) is False
