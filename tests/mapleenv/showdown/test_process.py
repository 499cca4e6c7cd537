"""The child-process watchdog: restart checks that fail back off, then give up with a reason."""

from __future__ import annotations

import threading
import time

import pytest

from mapleenv.showdown.process import Watchdog


def _until(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.01)
    return predicate()


def test_a_failing_check_backs_off_then_the_watch_gives_up() -> None:
    calls: list[float] = []

    def check() -> None:
        calls.append(time.monotonic())
        raise RuntimeError("port 1234 is taken")

    watchdog = Watchdog(check, "test-watchdog", interval=0.05, give_up_after=4).start()
    try:
        assert _until(lambda: watchdog.failure is not None)
        assert (
            watchdog.failure == "test-watchdog gave up after 4 failed restarts: port 1234 is taken"
        )
        assert _until(lambda: not watchdog.watching)  # the watch ended: no fifth try
        assert len(calls) == 4
        gaps = [b - a for a, b in zip(calls, calls[1:], strict=False)]
        assert all(gap >= wait for gap, wait in zip(gaps, (0.05, 0.1, 0.2), strict=True)), gaps
    finally:
        watchdog.stop()


def test_a_check_that_recovers_resets_the_count() -> None:
    """Failures must be in a row: one success starts the count again."""
    outcomes = iter([False, False, True, False, False, True] + [True] * 1000)
    done = threading.Event()
    calls = []

    def check() -> None:
        calls.append(1)
        if len(calls) >= 6:
            done.set()
        if not next(outcomes):
            raise RuntimeError("restart failed")

    watchdog = Watchdog(check, "test-watchdog", interval=0.01, give_up_after=3).start()
    try:
        assert done.wait(10)
        assert watchdog.failure is None
    finally:
        watchdog.stop()


def test_give_up_after_must_be_positive() -> None:
    with pytest.raises(ValueError, match="give_up_after must be >= 1, got 0"):
        Watchdog(lambda: None, "test-watchdog", give_up_after=0)
