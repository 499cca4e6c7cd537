"""Checkpoints: atomic writes of format 2 (no code: docs/training.md), RNG state capture as
plain numbers, resume-path resolution. The loader is the project's one safe loader,
:func:`mapleenv.policies.load_checkpoint` (``weights_only=True``), re-exported here."""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import pickle
import platform
import random
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mapleenv.policies import (
    CHECKPOINT_DIR,
    FORMAT_VERSION,
    LAST,
    CheckpointError,
    check_network,
    load_checkpoint,
    resolve_checkpoint,
    to_plain,
)
from trainer.run.threads import signals_held

log = logging.getLogger(__name__)

__all__ = [
    "CHECKPOINT_DIR",
    "FORMAT_VERSION",
    "LAST",
    "CheckpointError",
    "load_checkpoint",
    "remove_stale_temporaries",
    "resolve_checkpoint",
    "rng_state",
    "run_dir_of",
    "save_checkpoint",
    "set_rng_state",
]

TEMP_SUFFIX = ".tmp"


def rng_state() -> dict[str, Any]:
    """RNG states of Python, NumPy and torch (CPU and CUDA when present) as plain data:
    Python's ``getstate()`` tuple of ints, NumPy's ``get_state()`` tuple with its key array
    as an int64 tensor, torch's states as uint8 tensors."""
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": to_plain(np.random.get_state()),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` captured (as read back from a checkpoint)."""
    random.setstate(state["python"])
    name, keys, *rest = state["numpy"]
    keys = keys.numpy() if torch.is_tensor(keys) else np.asarray(keys)
    np.random.set_state((name, keys.astype(np.uint32), *rest))
    torch.set_rng_state(state["torch"].cpu())
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])


@functools.cache
def _versions() -> dict[str, str]:
    """The versions that wrote a checkpoint (metadata: never checked on loading)."""
    try:
        maple = metadata.version("maple")
    except metadata.PackageNotFoundError:
        maple = "unknown"
    return {
        "maple": maple,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
    }


def save_checkpoint(path: str | Path, payload: dict[str, Any]) -> Path:
    """Write ``payload`` to ``path`` atomically (temp file, fsync, ``os.replace``) in format
    2: :func:`~mapleenv.policies.to_plain` makes it plain data (NumPy arrays become tensors)
    or refuses it, and ``format_version`` and ``versions`` are added.

    A failed write leaves the previous file as it was and raises an ``OSError`` naming
    ``path`` and the cause (torch reports a full disk as ``unexpected pos``). SIGINT and
    SIGTERM wait until the file is written (:func:`~trainer.run.threads.signals_held`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with signals_held():  # Ctrl-C or SIGTERM now would cut the file (and the final save)
        return _write_atomically(path, payload)


def _write_atomically(path: Path, payload: dict[str, Any]) -> Path:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            data = to_plain({**payload, "format_version": FORMAT_VERSION, "versions": _versions()})
            torch.save(data, f)
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
    """Delete the temp files that a killed checkpoint writer left in a checkpoint dir
    (call it before a run writes there: a live writer's own temp file would go too). Only
    what :func:`save_checkpoint` names its temp files (``.<name>.pt.<random>.tmp``), only
    regular files, only in a real folder: a folder you were sent loses nothing else."""
    directory = Path(directory)
    if directory.is_symlink() or not directory.is_dir():
        return []
    stale = sorted(
        path
        for path in directory.glob(f".*.pt.*{TEMP_SUFFIX}")
        if stat.S_ISREG(path.lstat().st_mode)
    )
    for path in stale:
        path.unlink(missing_ok=True)
    if stale:
        log.info("removed %d stale temporary checkpoint file(s) in %s", len(stale), directory)
    return stale


def run_dir_of(checkpoint: Path) -> Path:
    """The run dir a checkpoint file belongs to (parent of ``checkpoints/``)."""
    checkpoint = checkpoint.resolve()
    if checkpoint.parent.name == CHECKPOINT_DIR:
        return checkpoint.parent.parent
    return checkpoint.parent


def check_pool(ckpt: Mapping[str, Any], source: str) -> None:
    """Every self-play member a checkpoint carries must be a policy whose weights fit its
    spec (:func:`check_network`), or resuming it is one :class:`CheckpointError` line here
    instead of a traceback in every env worker that rebuilds it."""
    state = ckpt.get("selfplay") or {}
    with state_must_fit(source):
        members = list(state.get("recent", [])) + list(state.get("archive", []))
    for member in members:
        if not isinstance(member, Mapping):
            raise CheckpointError(f"{source}: a self-play member is not a snapshot")
        check_network(member, f"{source} (self-play member {member.get('id')!r})")


@contextlib.contextmanager
def state_must_fit(source: str) -> Iterator[None]:
    """Restoring a checkpoint's training state (optimizer, reward normalizer, RNG, self-play
    pool): what does not fit this run is one :class:`CheckpointError` line naming the file."""
    try:
        yield
    except CheckpointError:
        raise
    except (AttributeError, IndexError, KeyError, RuntimeError, TypeError, ValueError) as exc:
        detail = next((line for line in str(exc).splitlines() if line.strip()), "")
        raise CheckpointError(
            f"{source}: its training state does not fit this run "
            f"({type(exc).__name__}: {detail.strip()[:200]})"
        ) from exc
