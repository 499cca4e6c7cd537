"""The checkpoint part of Maple's Python API (docs/architecture.md, "Contracts", 7):
``trainer.checkpoint.load_checkpoint(path)`` and friends, for scripts outside the repository.
A re-export that keeps those names put: the code lives in :mod:`trainer.run.checkpoint`, the
loader (format 2, ``weights_only=True``) in :func:`mapleenv.policies.load_checkpoint`."""

from trainer.run.checkpoint import (
    CHECKPOINT_DIR,
    FORMAT_VERSION,
    LAST,
    CheckpointError,
    load_checkpoint,
    resolve_checkpoint,
    run_dir_of,
    save_checkpoint,
)

__all__ = [
    "CHECKPOINT_DIR",
    "FORMAT_VERSION",
    "LAST",
    "CheckpointError",
    "load_checkpoint",
    "resolve_checkpoint",
    "run_dir_of",
    "save_checkpoint",
]
