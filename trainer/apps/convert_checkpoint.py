"""Convert an older Maple checkpoint (format 1, pickled) to format 2 (no code).

    maple-convert-checkpoint OLD.pt NEW.pt

(``python -m trainer.apps.convert_checkpoint`` runs the same).

This is the one place Maple unpickles a file with the full unpickler
(``torch.load(weights_only=False)``), which runs any code the file names: run it only on a
checkpoint you trust (one you or your team trained). NEW (which may be OLD itself) is then
written atomically in format 2 (tensors and plain values, read with
``weights_only=True``), which ``checkpoint=``, ``policy:<path>`` and ``resume=`` accept.
The model, its spec and config, counters, optimizer, RNG states, the self-play pool and
reward-normalization statistics are kept. The new file is read back with the safe loader
and its weights compared with OLD's. Prints a JSON summary; a bad file is one line and exit
code 2. docs/security.md
"""

from __future__ import annotations

import argparse
import json
import warnings
import zipfile
from pathlib import Path
from typing import Any

import torch

from trainer.run.checkpoint import (
    FORMAT_VERSION,
    CheckpointError,
    load_checkpoint,
    resolve_checkpoint,
    save_checkpoint,
)

OLD_VERSIONS = (None, 1)  # before format_version existed, and format 1


class ConvertError(Exception):
    """A file this script cannot convert (one line)."""


def read_trusted(path: Path) -> dict[str, Any]:
    """Unpickle ``path`` with the full unpickler (the user vouched for it). Only a zip
    file (what ``torch.save`` writes): the legacy reader allocates whatever sizes a file
    declares (random bytes end in a ``MemoryError``)."""
    if not zipfile.is_zipfile(path):
        raise ConvertError(
            f"cannot read {path} (truncated or not a checkpoint): not a file written by torch.save"
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            old = torch.load(path, map_location="cpu", weights_only=False)  # trusted by the user
    except Exception as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConvertError(f"cannot read {path} (truncated or not a checkpoint): {reason}") from exc
    if not isinstance(old, dict) or "model" not in old or "policy" not in old:
        raise ConvertError(f"{path} is not a Maple checkpoint (needs 'policy' and 'model')")
    version = old.get("format_version")
    if version not in OLD_VERSIONS:
        raise ConvertError(f"{path} has checkpoint format {version!r}; this script converts 1")
    return old


def convert(old_path: Path, new_path: Path) -> dict[str, Any]:
    """Write ``old_path`` (format 1) as ``new_path`` (format 2); returns the summary."""
    old_path = resolve_checkpoint(old_path)
    source_bytes = old_path.stat().st_size
    try:  # already format 2: nothing to trust, written again as it is
        old, already = load_checkpoint(old_path), True
    except CheckpointError:
        old, already = read_trusted(old_path), False
    payload = {k: v for k, v in old.items() if k not in ("format_version", "loader")}
    try:
        save_checkpoint(new_path, payload)
    except OSError as exc:
        raise ConvertError(str(exc)) from exc
    new = load_checkpoint(new_path)  # the safe loader accepts it
    same = set(new["model"]) == set(old["model"]) and all(
        torch.equal(torch.as_tensor(old["model"][k]), new["model"][k]) for k in old["model"]
    )
    if not same:
        raise ConvertError(f"{new_path}: the converted weights differ from {old_path}'s")
    return {
        "source": str(old_path),
        "source_bytes": source_bytes,
        "source_format": FORMAT_VERSION if already else old.get("format_version"),
        "out": str(new_path),
        "out_bytes": new_path.stat().st_size,
        "format_version": FORMAT_VERSION,
        "global_step": new.get("global_step"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("old", type=Path, help="the checkpoint to convert (a file you trust)")
    parser.add_argument("new", type=Path, help="where to write it in format 2 (may be OLD)")
    args = parser.parse_args()
    try:
        summary = convert(args.old, args.new)
    except (ConvertError, CheckpointError, FileNotFoundError) as exc:
        parser.exit(2, f"convert_checkpoint: {exc}\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
