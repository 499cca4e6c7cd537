"""Evaluation output: the rich table and the JSON document (its format: docs/evaluation.md)."""

from __future__ import annotations

import json
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


def results_json(results: Sequence[OpponentResult], **meta: Any) -> dict[str, Any]:
    """The JSON document: ``meta`` fields and ``opponents: {name: {battles, wins, ...}}``."""
    return {**meta, "opponents": {r.opponent: r.to_dict() for r in results}}


def write_json(path: str | Path, document: Mapping[str, Any]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, allow_nan=True) + "\n")
    return path
