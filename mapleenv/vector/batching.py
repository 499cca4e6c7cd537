"""Splitting a vector env's envs over shards, and joining the shards' batches and infos."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def split_envs(num_envs: int, shards: int) -> list[range]:
    """Contiguous env index ranges, as even as possible (earlier shards get the extra)."""
    if shards < 1:
        raise ValueError(f"shards must be >= 1, got {shards}")
    if num_envs < shards:
        raise ValueError(f"num_envs ({num_envs}) must be >= shards ({shards})")
    base, extra = divmod(num_envs, shards)
    ranges, start = [], 0
    for k in range(shards):
        stop = start + base + (1 if k < extra else 0)
        ranges.append(range(start, stop))
        start = stop
    return ranges


def concatenate_batches(parts: Sequence[Any]) -> Any:
    """Concatenates batched observations (arrays, or dicts/tuples of them) along axis 0."""
    first = parts[0]
    if isinstance(first, Mapping):
        return {key: concatenate_batches([p[key] for p in parts]) for key in first}
    if isinstance(first, tuple):
        return tuple(concatenate_batches(list(items)) for items in zip(*parts, strict=True))
    return np.concatenate([np.asarray(p) for p in parts], axis=0)


def slice_batch(batch: Any, envs: range) -> Any:
    """The rows `envs` of a batched action (array, or dict/tuple of arrays)."""
    if isinstance(batch, Mapping):
        return {key: slice_batch(value, envs) for key, value in batch.items()}
    if isinstance(batch, tuple):
        return tuple(slice_batch(value, envs) for value in batch)
    return np.asarray(batch)[envs.start : envs.stop]


def merge_infos(parts: Sequence[dict[str, Any]], ranges: Sequence[range]) -> dict[str, Any]:
    """Merges shard infos (Gymnasium 1.x vector infos: arrays + `_key` masks) into one.

    A key missing from a shard gets Gymnasium's defaults there (zeros, False masks, None
    for objects), exactly as if those envs had not reported it.
    """
    total = ranges[-1].stop
    merged: dict[str, Any] = {}
    keys = list(dict.fromkeys(key for part in parts for key in part))
    for key in keys:
        present = [
            (part[key], envs) for part, envs in zip(parts, ranges, strict=True) if key in part
        ]
        if all(isinstance(value, Mapping) for value, _ in present):
            merged[key] = merge_infos([dict(part.get(key, {})) for part in parts], ranges)
            continue
        if any(isinstance(value, Mapping) for value, _ in present):
            raise TypeError(f"info key {key!r} is a dict in some shards and not in others")
        arrays = [(np.asarray(value), envs) for value, envs in present]
        shapes = {array.shape[1:] for array, _ in arrays}
        if len(shapes) == 1 and all(array.dtype != object for array, _ in arrays):
            dtype = np.result_type(*(array.dtype for array, _ in arrays))
            out = np.zeros((total, *shapes.pop()), dtype=dtype)
            for array, envs in arrays:
                out[envs.start : envs.stop] = array
        else:
            out = np.full(total, None, dtype=object)
            for array, envs in arrays:
                for i, row in zip(envs, array, strict=True):
                    out[i] = row
        merged[key] = out
    return merged
