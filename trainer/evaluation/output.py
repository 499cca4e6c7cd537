"""Evaluation output: the rich table and the JSON document (its format: docs/evaluation.md)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from trainer.evaluation.stats import OpponentResult


def results_table(results: Sequence[OpponentResult], title: str | None = None) -> Any:
    """A rich ``Table``: opponent, battles, wins, win rate, 95% Wilson interval."""
    from rich.table import Table

    table = Table(title=title)
    for column in ("opponent", "battles", "wins", "win rate", "95% CI (Wilson)"):
        table.add_column(column, justify="left" if column == "opponent" else "right")
    for r in results:
        low, high = r.interval
        table.add_row(
            r.opponent, str(r.battles), str(r.wins), f"{r.win_rate:.1%}", f"{low:.1%} - {high:.1%}"
        )
    return table


QUALITY_COLUMNS = (
    ("moves", "moves"),
    ("failed", "failed"),
    ("immune", "into immunity"),
    ("missed", "missed"),
    ("switched_into_super_effective", "switched into SE hit"),
)


def quality_table(results: Sequence[OpponentResult], title: str | None = None) -> Any:
    """A rich ``Table`` of play quality: per opponent, both seats' per-battle means of
    moves, failed moves, moves into an immunity, misses and switch-ins hit
    super-effectively that turn (``None`` if no result has counts)."""
    from rich.table import Table

    rows = [r for r in results if r.quality]
    if not rows:
        return None
    table = Table(title=title or "play quality (per battle)")
    table.add_column("opponent")
    table.add_column("seat")
    for _, header in QUALITY_COLUMNS:
        table.add_column(header, justify="right")
    for r in rows:
        assert r.quality is not None
        for seat, label in (("agent", "agent"), ("opponent", r.opponent)):
            counts = r.quality[seat]
            table.add_row(
                r.opponent if seat == "agent" else "",
                label,
                *(f"{counts[key]:.2f}" for key, _ in QUALITY_COLUMNS),
            )
    return table


def results_json(results: Sequence[OpponentResult], **meta: Any) -> dict[str, Any]:
    """The JSON document: ``meta`` fields and ``opponents: {name: {battles, wins, ...}}``."""
    return {**meta, "opponents": {r.opponent: r.to_dict() for r in results}}


def write_json(path: str | Path, document: Mapping[str, Any]) -> Path:
    """Write ``document`` to ``path`` atomically (a temp file beside it, then a rename):
    a reader sees the old file or the whole new one, never a part."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(document, indent=2, allow_nan=True) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:50]}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)  # as an ordinary new file (mkstemp's is 0600)
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
