"""Write a compact copy of a training checkpoint, e.g. to ship a model in the repo.

    maple-export-checkpoint <run>/checkpoints/last.pt models/attention_ppo_gen9random.pt

Drops the self-play snapshot pool (the bulk of a self-play checkpoint); keeps the model,
its spec and run config (enough for ``trainer.evaluate`` and ``policy:<path>`` opponents),
and, unless ``--policy-only``, the optimizer, counters and RNG states so that
``resume=<exported file>`` continues training (self-play then restarts its pool).
``--mask-futile`` makes the copy play without the moves that surely fail (the snapshot's
``mask_futile`` key, which ``trainer.evaluate``, ``trainer.play`` and ``policy:`` opponents
follow unless told ``mask_futile=false``), whatever its run trained with; the run's config
stays as it was. Prints the sizes as JSON. Reads format 2 only (the safe loader); a file it
refuses is one line and exit code 2 (an older checkpoint: ``maple-convert-checkpoint``
first). ``python -m trainer.apps.export_checkpoint`` runs the same.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mapleenv.policies import snapshot_mask_futile
from trainer.run.checkpoint import CheckpointError, load_checkpoint, save_checkpoint

POLICY_KEYS = ("model", "policy", "config", "global_step", "iteration", "mask_futile")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "checkpoint", type=Path, help="a training checkpoint (e.g. <run dir>/checkpoints/last.pt)"
    )
    parser.add_argument("out", type=Path, help="the compact copy to write")
    parser.add_argument("--policy-only", action="store_true", help="drop optimizer and RNG states")
    parser.add_argument(
        "--mask-futile",
        action="store_true",
        help="the copy plays without the moves that surely fail (mask_futile=true by default)",
    )
    args = parser.parse_args()

    try:
        ckpt = load_checkpoint(args.checkpoint)
    except (CheckpointError, FileNotFoundError) as exc:
        parser.exit(2, f"export_checkpoint: {exc}\n")
    if args.policy_only:
        ckpt = {key: ckpt[key] for key in POLICY_KEYS if key in ckpt}
    else:
        ckpt["selfplay"] = None
    if args.mask_futile:
        ckpt["mask_futile"] = True
    args.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        save_checkpoint(args.out, ckpt)
    except OSError as exc:
        parser.exit(2, f"export_checkpoint: {exc}\n")
    print(
        json.dumps(
            {
                "source": str(args.checkpoint),
                "source_bytes": args.checkpoint.stat().st_size,
                "out": str(args.out),
                "out_bytes": args.out.stat().st_size,
                "global_step": ckpt.get("global_step"),
                "mask_futile": snapshot_mask_futile(ckpt),
            }
        )
    )


if __name__ == "__main__":
    main()
