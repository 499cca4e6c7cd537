"""Reading a run's ``metrics.csv`` back as curves (learning-curve plots and run comparisons)."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import numpy as np


def read_metrics(path: str | Path) -> list[dict[str, str]]:
    """The rows of a ``metrics.csv`` (a run dir is taken for its ``metrics.csv``)."""
    path = Path(path)
    if path.is_dir():
        path = path / "metrics.csv"
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def column(rows: list[dict[str, str]], key: str) -> np.ndarray:
    """One column as floats; empty cells (no episode of that kind ended) are NaN."""
    return np.array([float(r[key]) if r.get(key) not in (None, "") else np.nan for r in rows])


def smooth(values: np.ndarray, window: int) -> np.ndarray:
    """Trailing mean over the last ``window`` non-NaN values."""
    out = np.full_like(values, np.nan)
    for i in range(len(values)):
        recent = values[max(0, i - window + 1) : i + 1]
        recent = recent[~np.isnan(recent)]
        if len(recent):
            out[i] = recent.mean()
    return out


def cumulative_seconds(wall_s: np.ndarray) -> np.ndarray:
    """Seconds of training up to each row over all segments: ``wall_s`` restarts from 0 in
    each resumed segment, so every earlier segment's last value is added on (NaN rows are
    carried from the row before)."""
    out = np.full_like(wall_s, np.nan, dtype=float)
    offset, last = 0.0, np.nan
    for i, wall in enumerate(wall_s):
        if np.isnan(wall):
            out[i] = offset + last if not np.isnan(last) else np.nan
            continue
        if not np.isnan(last) and wall < last:
            offset += last
        last = wall
        out[i] = offset + wall
    return out


def training_minutes(wall_s: np.ndarray) -> float:
    """Minutes of training in all (resumed segments added up)."""
    total = cumulative_seconds(wall_s)
    total = total[~np.isnan(total)]
    return float(total[-1]) / 60 if len(total) else float("nan")


def extended_interp(xp: np.ndarray, fp: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """``np.interp`` over ``(xp, fp)``, continued past both ends at the run's mean rate
    (clamped ends put every tick of a plot's secondary axis beyond the last step on one spot)."""
    rate = (fp[-1] - fp[0]) / (xp[-1] - xp[0]) if xp[-1] > xp[0] else 0.0

    def f(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        y = np.interp(x, xp, fp)
        y = np.where(x > xp[-1], fp[-1] + (x - xp[-1]) * rate, y)
        return np.where(x < xp[0], fp[0] + (x - xp[0]) * rate, y)

    return f
