"""Public API, contract 7 of ../shared/DESIGN.md: ``trainer.checkpoint.load_checkpoint(path)``
and friends, what scripts outside the repo import. A thin re-export, kept so that name stays
put while the code moves: the checkpoint code lives in :mod:`trainer.run.checkpoint`, the
loader (format 2, read with ``weights_only=True``) in :func:`mapleenv.policies.load_checkpoint`.
Add no logic here."""

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
