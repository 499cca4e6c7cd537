"""Checkpoints: atomic writes, RNG state capture, resume-path resolution."""

from __future__ import annotations

import errno
import logging
import os
import pickle
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
CHECKPOINT_DIR = "checkpoints"
LAST = "last.pt"
TEMP_SUFFIX = ".tmp"


def rng_state() -> dict[str, Any]:
    """RNG states of Python, NumPy and torch (CPU and CUDA when present)."""
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` captured."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"].cpu())
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read (truncated, not a checkpoint); names the file."""


def save_checkpoint(path: str | Path, payload: dict[str, Any]) -> Path:
    """Write ``payload`` to ``path`` atomically: temp file, fsync, ``os.replace``.

    A failed write leaves the previous file as it was and raises an ``OSError`` naming
    ``path`` and the cause (torch reports a full disk as ``unexpected pos``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save({"format_version": FORMAT_VERSION, **payload}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except (OSError, RuntimeError, pickle.PicklingError, AttributeError, TypeError) as exc:
        Path(tmp).unlink(missing_ok=True)
        raise OSError(
            getattr(exc, "errno", None) or errno.EIO,
            f"could not write checkpoint {path}: {_write_cause(exc, path)}",
        ) from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return path


def _write_cause(exc: BaseException, path: Path) -> str:
    if getattr(exc, "errno", None) == errno.ENOSPC or shutil.disk_usage(path.parent).free < 2**20:
        return "no space left on the device"
    return str(exc) or type(exc).__name__


def remove_stale_temporaries(directory: Path) -> list[Path]:
    """Delete temp files that a killed writer left in a checkpoint dir (call it before a
    run writes there: a live writer's own temp file would go too)."""
    stale = sorted(Path(directory).glob(f".*{TEMP_SUFFIX}")) if Path(directory).is_dir() else []
    for path in stale:
        path.unlink(missing_ok=True)
    if stale:
        log.info("removed %d stale temporary checkpoint file(s) in %s", len(stale), directory)
    return stale


def load_checkpoint(path: str | Path, map_location: Any = "cpu") -> dict[str, Any]:
    """Load a checkpoint written by :func:`save_checkpoint` (run dir or file accepted);
    an unreadable file (truncated, not a checkpoint) raises :class:`CheckpointError`."""
    path = resolve_checkpoint(path)
    # Our own files: they hold RNG states (NumPy objects), so the full unpickler is needed.
    try:
        ckpt = torch.load(path, map_location=map_location, weights_only=False)
    except (OSError, RuntimeError, EOFError, pickle.UnpicklingError, ValueError) as exc:
        raise CheckpointError(
            f"cannot read checkpoint {path} (truncated or not a Maple checkpoint): {exc}"
        ) from exc
    if not isinstance(ckpt, dict) or ckpt.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"{path} is not a Maple checkpoint (format {FORMAT_VERSION})")
    return ckpt


def resolve_checkpoint(path: str | Path) -> Path:
    """A checkpoint file from a file path or a run dir (its ``checkpoints/last.pt``)."""
    path = Path(path).expanduser()
    if path.is_dir():
        candidate = path / CHECKPOINT_DIR / LAST
        if not candidate.is_file():
            raise FileNotFoundError(f"no {CHECKPOINT_DIR}/{LAST} in run dir {path}")
        return candidate
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    return path


def run_dir_of(checkpoint: Path) -> Path:
    """The run dir a checkpoint file belongs to (parent of ``checkpoints/``)."""
    checkpoint = checkpoint.resolve()
    if checkpoint.parent.name == CHECKPOINT_DIR:
        return checkpoint.parent.parent
    return checkpoint.parent
