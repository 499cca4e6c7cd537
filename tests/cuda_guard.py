"""A plugin module for tests (``plugins=["cuda_guard"]``): in an env worker (a spawned
process) it pretends a GPU is there and makes CUDA's initialisation raise, so that worker
code that would put anything on CUDA (a frozen policy, a self-play snapshot, a plugin)
fails the step instead of passing on a machine without a GPU. In the process that starts
the workers (the trainer) it does nothing.

It also registers the opponent ``cuda_probe``, which touches CUDA when it is built: the
negative control that shows the guard fires in a worker (only there)."""

from __future__ import annotations

import multiprocessing
import os
from typing import Any, NoReturn

import torch
from poke_env.player import RandomPlayer

from mapleenv.opponents import register_opponent

MESSAGE = "an env worker initialised CUDA"


def _refuse(*args: Any, **kwargs: Any) -> NoReturn:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    raise RuntimeError(f"{MESSAGE} (CUDA_VISIBLE_DEVICES={visible!r})")


def _in_worker() -> bool:
    return multiprocessing.parent_process() is not None


def _cuda_probe(argument: str, *, battle_format: str, **kwargs: Any) -> RandomPlayer:
    if _in_worker():  # the parent builds one env too (for the spaces)
        torch.zeros(1, device="cuda")
    return RandomPlayer(battle_format=battle_format, start_listening=False)


if _in_worker():
    torch.cuda.is_available = lambda: True  # type: ignore[assignment]
    torch.cuda.device_count = lambda: 1  # type: ignore[assignment]
    torch.cuda._lazy_init = _refuse  # type: ignore[assignment]
    torch.cuda.init = _refuse  # type: ignore[assignment]

register_opponent("cuda_probe", _cuda_probe)
