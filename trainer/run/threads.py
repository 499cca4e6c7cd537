"""CPU threads and signals around the training loop: how many cores this process may use,
the update's own thread count, and a block a Ctrl-C cannot break (the final save)."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """Ignore SIGINT inside the block (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def torch_threads(threads: int, then: int) -> Iterator[None]:
    """Run the block on ``threads`` torch threads, then set ``then``."""
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(then)


def cpu_cores() -> int:
    """CPU cores this process may run on (its affinity where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 2
