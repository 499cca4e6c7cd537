"""The run folder a run writes into (a new one, or a resumed run's someone may have sent
you): checked before anything runs or is written (docs/security.md, "Run folders")."""

from __future__ import annotations

from pathlib import Path

from mapleenv.files import check_output_folder
from mapleenv.showdown import SERVER_LINKS
from trainer.run.metrics import check_metrics


def check_run_folder(run_dir: str | Path, *, key: str = "resume") -> None:
    """A ``ValueError`` line when ``run_dir`` holds a link or special file at any depth
    (the links Maple makes in a server folder excepted: it re-points them) or a
    ``metrics.csv`` the run could not resume with (too large, broken: :func:`check_metrics`).
    Nothing is written."""
    run_dir = Path(run_dir)
    check_output_folder(run_dir, key=key, links_allowed=SERVER_LINKS)
    metrics = run_dir / "metrics.csv"
    if metrics.is_file() and metrics.stat().st_size > 0:
        check_metrics(metrics)
