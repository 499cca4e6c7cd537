"""Training progress a person can read: done of total and the time left.

:func:`summary_line` is the line the trainer logs every ``log_every`` iterations
(``iter 50 | step 76,800/2,000,000 (4%) | eta 1h02m | sps 551 | ...``); :class:`ConsoleProgress`
is the live rich line on a terminal. The time left is the nearer of two ends: the steps
still to go at this segment's pace, or what is left of the ``max_minutes`` budget.
"""

from __future__ import annotations

import contextlib
import logging
import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

__all__ = ["ConsoleProgress", "RunClock", "duration", "logs_above", "summary_line"]


def duration(seconds: float) -> str:
    """``45s``, ``12m05s``, ``3h02m``: a time span at the precision a person reads."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


@dataclass
class RunClock:
    """Where a run stands against its two ends, ``total_steps`` and ``max_minutes``.

    ``first_step`` and ``seconds_before``: the step count and training seconds when this
    segment (a start or a resume) began; the pace is this segment's own."""

    total_steps: int
    max_minutes: float | None
    first_step: int = 0
    seconds_before: float = 0.0

    def time_left(self, step: int, train_seconds: float) -> tuple[float, str] | None:
        """Seconds until the run ends and what ends it (``steps`` or ``time budget``);
        None before the pace is known."""
        ends = []
        spent, done = train_seconds - self.seconds_before, step - self.first_step
        if spent > 0 and done > 0:
            ends.append((max(self.total_steps - step, 0) * spent / done, "steps"))
        if self.max_minutes is not None:
            ends.append((max(60.0 * self.max_minutes - train_seconds, 0.0), "time budget"))
        return min(ends) if ends else None

    def status(self, step: int, train_seconds: float) -> str:
        """``step 76,800/2,000,000 (4%) | eta 1h02m`` (``eta 12m00s, time budget`` when the
        budget ends the run first)."""
        share = min(step / self.total_steps, 1.0)
        text = f"step {step:,}/{self.total_steps:,} ({share:.0%})"
        left = self.time_left(step, train_seconds)
        if left is not None:
            seconds, end = left
            text += f" | eta {duration(seconds)}" + (", time budget" if end != "steps" else "")
        return text


def _fmt(value: float, spec: str) -> str:
    return (
        "-"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else format(value, spec)
    )


def summary_line(row: dict[str, Any], status: str | None = None) -> str:
    """One-line progress summary: where the run stands (``status``, from
    :meth:`RunClock.status`; else the step alone), SPS, return, win rate, length."""
    status = status or f"step {row['global_step']:,}"
    return (
        f"{status} | sps {_fmt(row['sps'], '.0f')} | "
        f"return {_fmt(row['episode_return'], '.3f')} | win {_fmt(row['win_rate'], '.1%')} | "
        f"len {_fmt(row['episode_length'], '.1f')}"
    )


@contextlib.contextmanager
def logs_above() -> Iterator[None]:
    """While a rich live display runs: console log handlers write through rich's stream
    proxies (sys.stdout/sys.stderr meanwhile), so their lines print above the live lines
    instead of through them."""
    proxies = {id(sys.__stderr__): sys.stderr, id(sys.__stdout__): sys.stdout}
    rerouted = []
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler) and id(handler.stream) in proxies:
            rerouted.append((handler, handler.setStream(proxies[id(handler.stream)])))
    try:
        yield
    finally:
        for handler, stream in rerouted:
            handler.setStream(stream)


class ConsoleProgress:
    """A live rich progress line on stderr (with the logs; stdout is for results): steps
    done of the total, the time left (:class:`RunClock`), SPS, return, win rate; silent
    when stderr is not a terminal (the logged :func:`summary_line` says the same)."""

    def __init__(self, clock: RunClock) -> None:
        self._progress = Progress(
            TextColumn("[bold]train"),
            BarColumn(bar_width=30),
            MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
            transient=False,
            console=Console(stderr=True),
        )
        self.clock = clock
        self.live = self._progress.console.is_terminal
        self._task = self._progress.add_task(
            "train", total=clock.total_steps, completed=clock.first_step, info=""
        )
        self._logs = logs_above()
        if self.live:
            self._progress.start()
            self._logs.__enter__()

    def update(self, row: dict[str, Any], train_seconds: float) -> None:
        if self.live:
            step = row["global_step"]
            left = self.clock.time_left(step, train_seconds)
            eta = "eta ?" if left is None else f"eta {duration(left[0])}"
            self._progress.update(self._task, completed=step, info=summary_line(row, eta))

    def stop(self) -> None:
        if self.live:
            self._logs.__exit__(None, None, None)
            self.live = False
            self._progress.stop()
