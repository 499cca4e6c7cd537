"""CPU threads and signals around the training loop: how many cores this process may use,
the update's own thread count, a block a Ctrl-C cannot break (the final save) and one that
holds Ctrl-C and SIGTERM until it is done (every checkpoint write)."""

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
def signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block is done (main thread only; elsewhere a no-op).

    A checkpoint write cut by the trainer's interrupt handler fails half-way, and the final
    save that the interrupt asks for never happens (seen: SIGTERM during a periodic save
    ended a run with a traceback). Inside the block the signals are only noted; the first
    one goes to the handler that was in place right after the block. (Not a signal mask:
    a blocked process signal would go to another thread, and Python would still run the
    handler in the main thread mid-block.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    previous = {
        signum: signal.signal(signum, lambda n, _frame: noted.append(n))
        for signum in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if noted:
            _deliver(noted[0], previous[noted[0]])


def _deliver(signum: int, handler: object) -> None:
    """Run ``handler`` for ``signum`` as the signal would have (default: raise it again)."""
    if callable(handler):
        handler(signum, None)
    elif handler != signal.SIG_IGN:
        signal.raise_signal(signum)


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
