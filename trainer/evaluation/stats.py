"""Win statistics of an evaluation: the Wilson interval and one opponent's result."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

Z95 = 1.959963984540054  # two-sided 95% normal quantile


def wilson_interval(wins: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion ``wins / n`` (``(0, 1)`` if n = 0)."""
    if n < 0 or not 0 <= wins <= n:
        raise ValueError(f"need 0 <= wins <= n, got wins={wins}, n={n}")
    if n == 0:
        return 0.0, 1.0
    p = wins / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, center - half), min(1.0, center + half)


@dataclass
class OpponentResult:
    """Outcome of the battles against one opponent."""

    opponent: str
    battles: int
    wins: int
    mean_turns: float = math.nan
    quality: dict[str, Any] | None = None  # play-quality means (evaluation/quality.py)
    search: dict[str, Any] | None = None  # what decision-time search did (SearchStats)
    # per env, its counted battles' results in order ("1": won): runs with one seed pair up
    outcomes: list[str] | None = None

    @property
    def win_rate(self) -> float:
        return self.wins / self.battles if self.battles else math.nan

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.wins, self.battles)

    def to_dict(self) -> dict[str, Any]:
        low, high = self.interval
        return {
            "battles": self.battles,
            "wins": self.wins,
            "win_rate": self.win_rate,
            "ci_low": low,
            "ci_high": high,
            "mean_turns": self.mean_turns,
            **({"quality": self.quality} if self.quality is not None else {}),
            **({"search": self.search} if self.search is not None else {}),
            **({"outcomes": self.outcomes} if self.outcomes is not None else {}),
        }
