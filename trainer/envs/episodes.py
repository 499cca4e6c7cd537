"""Finished episodes of a vector env: reading them from ``info`` and per-opponent win rates.

:func:`finished_values` is the one reader of finished episodes' ``info`` (``final_info``
under SAME_STEP autoreset, the step's ``info`` under NEXT_STEP); :class:`OpponentStats` is a
vector-env wrapper recording ``(info["opponent"], info["won"])`` for the ``win_rate/<name>``
metrics columns (:func:`win_rate_columns`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv, VectorWrapper


def finished_values(info: dict[str, Any], done: np.ndarray, key: str) -> dict[int, Any]:
    """``{env index: info[key]}`` for the envs in ``done`` whose final info has ``key``."""
    final = info.get("final_info", info)
    values, present = final.get(key), final.get(f"_{key}")
    if values is None:
        return {}
    return {int(i): values[i] for i in np.flatnonzero(done) if present is None or present[i]}


def finished_infos(info: dict[str, Any], done: np.ndarray) -> dict[int, dict[str, Any]]:
    """``{env index: its final info as a dict}`` for the envs in ``done``."""
    final = info.get("final_info", info)
    out: dict[int, dict[str, Any]] = {}
    for i in np.flatnonzero(done):
        out[int(i)] = {
            key: values[i]
            for key, values in final.items()
            if not key.startswith("_")
            and isinstance(values, np.ndarray)
            and (final.get(f"_{key}") is None or final[f"_{key}"][i])
        }
    return out


def plain(value: Any) -> Any:
    """A Hydra/OmegaConf node as plain Python (dicts stay mappings)."""
    try:
        from omegaconf import OmegaConf

        if OmegaConf.is_config(value):
            return OmegaConf.to_container(value, resolve=True)
    except ImportError:  # pragma: no cover - omegaconf ships with hydra
        pass
    return value


def win_rate_columns(opponent: Any) -> list[str]:
    """``win_rate/<name>`` metrics columns for ``env.opponent`` (a name or a mix; ``None``
    for envs without opponents: no columns)."""
    from mapleenv.opponents import mix_members

    if opponent is None:
        return []
    return [f"win_rate/{name}" for name in mix_members(plain(opponent))]


def opponent_win_rates(
    columns: Iterable[str], opponents: Sequence[str], wins: Sequence[bool]
) -> dict[str, float]:
    """Win rate per ``win_rate/<name>`` column over episodes (NaN: none against it)."""
    totals: dict[str, list[int]] = {}
    for name, won in zip(opponents, wins, strict=True):
        counts = totals.setdefault(f"win_rate/{name}", [0, 0])
        counts[0] += bool(won)
        counts[1] += 1
    return {c: (totals[c][0] / totals[c][1] if c in totals else math.nan) for c in columns}


class OpponentStats(VectorWrapper):
    """Records ``(info["opponent"], info["won"])`` of every finished episode, and
    ``(info["opponent_policy_id"], info["won"])`` for self-play's promotion gate.

    Works with both autoreset modes (``final_info`` under SAME_STEP). Episodes without
    ``won`` (aborted battles) or ``opponent`` are not recorded.
    """

    def __init__(self, env: VectorEnv, columns: Sequence[str]):
        super().__init__(env)
        self.columns = list(columns)
        self.opponents: list[str] = []
        self.wins: list[bool] = []
        # (pool id, won) of episodes a frozen self-play snapshot played
        self.snapshot_results: list[tuple[int, bool]] = []

    def step(self, actions: Any) -> tuple[Any, ...]:
        obs, rewards, terminated, truncated, info = self.env.step(actions)
        done = np.asarray(terminated) | np.asarray(truncated)
        if done.any():
            names = finished_values(info, done, "opponent")
            policy_ids = finished_values(info, done, "opponent_policy_id")
            for i, won in finished_values(info, done, "won").items():
                if i in names:
                    self.opponents.append(str(names[i]))
                    self.wins.append(bool(won))
                if i in policy_ids:
                    self.snapshot_results.append((int(policy_ids[i]), bool(won)))
        return obs, rewards, terminated, truncated, info

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self.env.call(name, *args, **kwargs)

    def pop_snapshot_results(self) -> list[tuple[int, bool]]:
        """``(snapshot id, won)`` of the episodes against self-play snapshots since the last
        call (``info["opponent_policy_id"]``)."""
        results, self.snapshot_results = self.snapshot_results, []
        return results

    def pop_win_rates(self) -> dict[str, float]:
        """Win rate per column since the last call (NaN: no episode against it)."""
        rates = opponent_win_rates(self.columns, self.opponents, self.wins)
        self.opponents, self.wins = [], []
        return rates
