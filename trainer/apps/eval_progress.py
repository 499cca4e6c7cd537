"""Evaluation progress a person can read: one line per opponent, live on a terminal.

On a terminal (stderr) each opponent has one rich line: its battles done of its total,
the wins so far, the time spent and an ETA; log lines print above them. Elsewhere (CI
logs, a file) the same counts are plain log lines at every tenth of an opponent's battles
and at its last one, so a 400-battle run writes ten lines per opponent, not one per battle.
"""

from __future__ import annotations

import logging
import time
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

from trainer.run.progress import duration, logs_above

log = logging.getLogger(__name__)


class EvaluationProgress:
    """A context manager whose value is ``evaluate_policy``'s ``progress`` callback,
    ``progress(opponent, done, total, wins)``."""

    def __init__(self, opponents: list[str], battles: int) -> None:
        self.console = Console(stderr=True)
        self.live = self.console.is_terminal
        self.bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(bar_width=30),
            MofNCompleteColumn(),
            TextColumn("{task.fields[won]}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=self.console,
            disable=not self.live,
        )
        self.opponents = opponents
        self.tasks = {
            name: self.bar.add_task(f"vs {name}", total=battles, won="", start=False)
            for name in opponents
        }
        self.started: dict[str, float] = {}  # when each opponent's battles began
        self._logs: Any = None

    def __enter__(self) -> Any:
        self._begin(self.opponents[0])
        if self.live:
            self.bar.start()
            self._logs = logs_above()
            self._logs.__enter__()
        return self.update

    def __exit__(self, *exc: object) -> None:
        if self._logs is not None:
            self._logs.__exit__(*exc)
        self.bar.stop()

    def _begin(self, name: str) -> None:
        self.started[name] = time.monotonic()
        self.bar.start_task(self.tasks[name])

    def update(self, name: str, done: int, total: int, wins: int) -> None:
        """One more battle against ``name`` counted: ``done`` of ``total``, ``wins`` won."""
        won = f"{wins} won ({wins / done:.0%})"
        self.bar.update(self.tasks[name], completed=done, won=won)
        if not self.live and (done == total or done % max(total // 10, 1) == 0):
            elapsed = time.monotonic() - self.started.get(name, time.monotonic())
            log.info(
                "vs %s: %d/%d battles, %s, %s", name, done, total, won, _eta(elapsed, done, total)
            )
        k = self.opponents.index(name)
        if done == total and k + 1 < len(self.opponents):
            self._begin(self.opponents[k + 1])


def _eta(elapsed: float, done: int, total: int) -> str:
    """``eta 2m10s`` from the pace so far (``done`` of ``total`` in ``elapsed`` s)."""
    if done >= total:
        return f"done in {duration(elapsed)}"
    return f"eta {duration(elapsed / done * (total - done))}"
