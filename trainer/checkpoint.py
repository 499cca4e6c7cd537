"""``trainer.checkpoint.load_checkpoint`` (the Python API scripts outside the repo import):
the checkpoint code lives in :mod:`trainer.run.checkpoint`; the loader (format 2, read with
``weights_only=True``) is :func:`mapleenv.policies.load_checkpoint`."""

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
