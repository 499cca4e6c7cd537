"""Where runs keep checkpoints, the format they are in, and the error for a file that cannot
be read: torch-free, so a command can name and find a checkpoint, and refuse bad input,
before it pays torch's import (:mod:`mapleenv.policies.checkpoint` reads the files)."""

from __future__ import annotations

from pathlib import Path

FORMAT_VERSION = 2
CHECKPOINT_DIR = "checkpoints"
LAST = "last.pt"
# the command (python -m trainer.apps.convert_checkpoint)
CONVERT = "maple-convert-checkpoint"


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read safely (truncated, not a checkpoint, an
    older pickled format, a pickle naming code); the message names the file and why."""


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
