"""Per-iteration metrics: ``metrics.csv`` and TensorBoard events (the console line:
:mod:`trainer.run.progress`)."""

from __future__ import annotations

import csv
import logging
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from mapleenv.files import open_append, open_read

log = logging.getLogger(__name__)

MAX_METRICS_BYTES = 256 << 20  # a metrics.csv to resume: ~500k iterations of ~500 bytes
MAX_COLUMNS = 1000  # columns of its header (Maple writes ~40)

COLUMNS = (
    "iteration",
    "global_step",
    "sps",
    "episodes",
    "episodes_aborted",
    "episode_return",
    "episode_length",
    "win_rate",
    "policy_loss",
    "value_loss",
    "entropy",
    "approx_kl",
    "clip_frac",
    "explained_variance",
    "lr",
    "epochs",
    "rollout_s",
    "update_s",
    "wall_s",
)


class MetricsLogger:
    """Appends one row per iteration to ``metrics.csv`` (and TensorBoard if enabled);
    ``extra_columns`` (e.g. ``win_rate/<opponent>``) follow :data:`COLUMNS`."""

    def __init__(
        self,
        run_dir: str | Path,
        tensorboard: bool = True,
        extra_columns: tuple[str, ...] = (),
        through_iteration: int | None = None,
    ) -> None:
        """``through_iteration`` (a resume): rows of later iterations are dropped, e.g. one
        written just before a crash that the checkpoint being resumed did not see."""
        self.columns = (*COLUMNS, *extra_columns)
        self.path = Path(run_dir) / "metrics.csv"
        new_file = not self.path.exists() or self.path.stat().st_size == 0
        if not new_file:
            self._rewrite_existing(through_iteration)
        self._file = open_append(self.path, newline="")
        self._csv = csv.DictWriter(self._file, fieldnames=self.columns, extrasaction="ignore")
        if new_file:
            self._csv.writeheader()
            self._file.flush()
        self._tb = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(log_dir=str(Path(run_dir) / "tensorboard"))

    def _rewrite_existing(self, through_iteration: int | None) -> None:
        """A resumed run may log other columns (a new opponent, evaluation on or off): keep
        the file's columns in their order and add the new ones, so that every row stays
        under its header; drop rows past ``through_iteration``. Read row by row (a pass to
        count, a pass to copy: memory of one row), rewritten atomically, and only if that
        changed anything; a file that is not a metrics file is a ``ValueError``
        (:func:`check_metrics`, which the preflight runs first)."""
        old, dropped = check_metrics(self.path, through_iteration)
        self.columns = (*old, *(c for c in self.columns if c not in old))
        if dropped:
            log.warning(
                "metrics.csv: dropped %d row(s) past iteration %d (not in the checkpoint)",
                dropped,
                through_iteration,
            )
        if self.columns == old and not dropped:
            return
        fd, name = tempfile.mkstemp(prefix=".metrics.csv.", suffix=".tmp", dir=self.path.parent)
        tmp = Path(name)
        try:
            with open_read(self.path, newline="") as source, os.fdopen(fd, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=self.columns, extrasaction="ignore")
                writer.writeheader()
                for row in csv.DictReader(source):
                    if through_iteration is None or not _after(
                        row.get("iteration"), through_iteration
                    ):
                        writer.writerow(row)
            tmp.replace(self.path)
        finally:
            tmp.unlink(missing_ok=True)

    def write(self, row: dict[str, Any]) -> None:
        self._csv.writerow({k: ("" if _is_nan(row.get(k)) else row.get(k)) for k in self.columns})
        self._file.flush()
        if self._tb is not None:
            step = int(row["global_step"])
            for key in self.columns[2:]:
                value = row.get(key)
                if value is not None and not _is_nan(value):
                    self._tb.add_scalar(f"maple/{key}", float(value), step)

    def close(self) -> None:
        self._file.close()
        if self._tb is not None:
            self._tb.close()


def check_metrics(
    path: str | Path, through_iteration: int | None = None
) -> tuple[tuple[str, ...], int]:
    """(the header's columns, how many rows are past ``through_iteration``) of a
    ``metrics.csv`` to resume, read row by row; a file over :data:`MAX_METRICS_BYTES`, a
    link or special file, a header of more than :data:`MAX_COLUMNS` columns, a field
    over the csv module's limit or bytes that are not UTF-8 is one ``ValueError`` line."""
    path = Path(path)
    try:
        with open_read(path, newline="") as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_METRICS_BYTES:
                raise ValueError(
                    f"{path} is {size / (1 << 20):.1f} MiB; a metrics.csv to resume may "
                    f"have at most {MAX_METRICS_BYTES >> 20} MiB (move it away to start "
                    "a new one)"
                )
            reader = csv.reader(f)
            header = tuple(next(reader, ()))
            if len(header) > MAX_COLUMNS or "iteration" not in header:
                raise ValueError(
                    f"{path} is not a metrics file: its header has {len(header)} "
                    f"column(s){'' if 'iteration' in header else ', no iteration column'}"
                )
            at = header.index("iteration")
            dropped = 0
            for row in reader:
                if through_iteration is not None and len(row) > at:
                    dropped += _after(row[at], through_iteration)
    except (csv.Error, UnicodeDecodeError, OSError) as exc:
        where = f" (line {reader.line_num})" if "reader" in locals() else ""
        raise ValueError(
            f"cannot resume with {path}{where}: {exc}; move it away to start a new one"
        ) from None
    return header, dropped


def _after(iteration: str | None, last: int) -> bool:
    try:
        return int(float((iteration or "")[:40])) > last
    except (ValueError, OverflowError):
        return False


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)
