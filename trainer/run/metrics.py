"""Per-iteration metrics: ``metrics.csv``, TensorBoard events and a live console line."""

from __future__ import annotations

import csv
import logging
import math
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

log = logging.getLogger(__name__)

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


def _fmt(value: float, spec: str) -> str:
    return (
        "-"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else format(value, spec)
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
        self._file = self.path.open("a", newline="")
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
        under its header; drop rows past ``through_iteration``. Rewritten atomically, and
        only if that changed anything."""
        with self.path.open(newline="") as f:
            reader = csv.DictReader(f)
            old = tuple(reader.fieldnames or ())
            rows = list(reader)
        self.columns = (*old, *(c for c in self.columns if c not in old))
        kept = rows
        if through_iteration is not None:
            kept = [r for r in rows if not _after(r.get("iteration"), through_iteration)]
            if len(kept) < len(rows):
                log.warning(
                    "metrics.csv: dropped %d row(s) past iteration %d (not in the checkpoint)",
                    len(rows) - len(kept),
                    through_iteration,
                )
        if self.columns == old and len(kept) == len(rows):
            return
        rows = kept
        tmp = self.path.with_suffix(".csv.tmp")
        with tmp.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=self.columns)
            writer.writeheader()
            writer.writerows(rows)
        tmp.replace(self.path)

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


def _after(iteration: str | None, last: int) -> bool:
    try:
        return int(float(iteration or "")) > last
    except ValueError:
        return False


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def summary_line(row: dict[str, Any]) -> str:
    """One-line progress summary: step, SPS, return, win rate."""
    return (
        f"step {row['global_step']:,} | sps {_fmt(row['sps'], '.0f')} | "
        f"return {_fmt(row['episode_return'], '.3f')} | win {_fmt(row['win_rate'], '.1%')} | "
        f"len {_fmt(row['episode_length'], '.1f')}"
    )


class ConsoleProgress:
    """A live rich progress line on stderr (with the logs; stdout is for results); silent
    when stderr is not a terminal."""

    def __init__(self, total: int, completed: int) -> None:
        self._progress = Progress(
            TextColumn("[bold]train"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            transient=False,
            console=Console(stderr=True),
        )
        self.live = self._progress.console.is_terminal
        self._task = self._progress.add_task("train", total=total, completed=completed, info="")
        self._rerouted: list[tuple[logging.StreamHandler, Any]] = []
        if self.live:
            self._progress.start()
            self._reroute_logging()

    def _reroute_logging(self) -> None:
        """Send console log handlers through rich's stream proxies, so log lines print
        above the live line instead of through it."""
        proxies = {id(sys.__stderr__): sys.stderr, id(sys.__stdout__): sys.stdout}
        for handler in logging.getLogger().handlers:
            if isinstance(handler, logging.StreamHandler) and id(handler.stream) in proxies:
                self._rerouted.append((handler, handler.setStream(proxies[id(handler.stream)])))

    def update(self, row: dict[str, Any]) -> None:
        if self.live:
            self._progress.update(self._task, completed=row["global_step"], info=summary_line(row))

    def stop(self) -> None:
        if self.live:
            for handler, stream in self._rerouted:
                handler.setStream(stream)
            self._rerouted.clear()
            self._progress.stop()
