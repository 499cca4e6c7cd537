"""One supervisor for Maple's child processes (Showdown servers and simulator hosts).

:func:`spawn` starts a child that dies with its parent (``PR_SET_PDEATHSIG`` on Linux),
:func:`terminate` stops it (SIGTERM, then SIGKILL; a whole process group when asked),
:func:`kill` stops a hung one at once (SIGKILL), :func:`reap` waits for one that is ending,
:func:`stop_at_exit` stops still-running owners from an ``atexit`` hook, and
:class:`Watchdog` restarts dead children from a daemon thread (backing off, then giving up
with a :attr:`Watchdog.failure` that owners report so the run can stop).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Protocol

logger = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1
_libc_prctl: Any = None
if sys.platform.startswith("linux"):
    with contextlib.suppress(OSError, AttributeError):
        _libc_prctl = ctypes.CDLL(None, use_errno=True).prctl


def _die_with_parent() -> None:  # runs in the child between fork and exec
    _libc_prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def die_with_parent() -> None:
    """Make this process get SIGKILL when its parent dies (Linux; elsewhere a no-op): for
    workers started by ``multiprocessing``, which would outlive a trainer killed with
    SIGKILL while they wait on a slow call."""
    if _libc_prctl is None:
        return
    parent = os.getppid()
    _die_with_parent()
    if os.getppid() != parent:  # the parent died before the call: nothing would signal us
        os.kill(os.getpid(), signal.SIGKILL)


def spawn(cmd: Sequence[str], **popen_kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen(cmd, ...)`` whose child gets SIGKILL when the thread that started
    it exits (Linux ``PR_SET_PDEATHSIG``): start children from a long-lived thread."""
    preexec = _die_with_parent if _libc_prctl is not None else None
    return subprocess.Popen(list(cmd), preexec_fn=preexec, **popen_kwargs)


def _signal(process: subprocess.Popen, sig: int, group: bool) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if group:
            os.killpg(process.pid, sig)
        else:
            process.send_signal(sig)


def reap(process: subprocess.Popen, timeout: float) -> int | None:
    """Wait up to ``timeout`` s for ``process`` to end and reap it: its exit code, or None
    while it still runs."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=timeout)
    return process.returncode


def kill_now(process: subprocess.Popen) -> None:
    """SIGKILL ``process`` and reap it (a hung or stopped child does not read its stdin)."""
    with contextlib.suppress(OSError):
        process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)


def close_pipe_child(process: subprocess.Popen, timeout: float = 2.0) -> None:
    """Stop a child that exits when its stdin closes (Maple's Node hosts): EOF on stdin,
    then SIGTERM/SIGKILL if it lingers; its pipes closed."""
    if process.poll() is None:
        with contextlib.suppress(OSError):
            process.stdin.close()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            terminate(process, timeout=timeout)
    for stream in (process.stdin, process.stdout):
        if stream is not None and not stream.closed:
            stream.close()


def terminate(process: subprocess.Popen, timeout: float = 5.0, *, group: bool = False) -> None:
    """Stop ``process`` (SIGTERM, then SIGKILL after ``timeout`` s) and reap it. With
    ``group`` (a child started in its own session) signal its whole process group, and
    sweep the group afterwards: children of a crashed process may outlive it."""
    if process.poll() is None:
        _signal(process, signal.SIGTERM, group)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            _signal(process, signal.SIGKILL, group)
            process.wait(timeout)
    if group:
        _signal(process, signal.SIGKILL, group)


def kill(process: subprocess.Popen, timeout: float = 5.0, *, group: bool = False) -> None:
    """SIGKILL ``process`` (its whole group with ``group``) and reap it: for a hung or
    stopped (SIGSTOP) child, which would not act on SIGTERM."""
    _signal(process, signal.SIGKILL, group)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout)


class Stoppable(Protocol):
    def stop(self) -> None: ...


_LIVE: weakref.WeakSet[Any] = weakref.WeakSet()


def stop_at_exit(owner: Stoppable) -> None:
    """Call ``owner.stop()`` at interpreter exit unless :func:`forget_at_exit` ran first."""
    _LIVE.add(owner)


def forget_at_exit(owner: Stoppable) -> None:
    _LIVE.discard(owner)


@atexit.register
def _stop_all() -> None:
    for owner in list(_LIVE):
        with contextlib.suppress(Exception):
            owner.stop()


class Watchdog:
    """Calls ``check()`` every ``interval`` s in a daemon thread until :meth:`stop`.

    ``check`` restarts dead children. When it raises, the next tries wait ``interval``,
    then twice as long each time (up to ``max_backoff`` s): 1, 2, 4, 8 s by default, so a
    watch that gives up does so within the env's 60-s wait for a battle. After
    ``give_up_after`` failures in a row the watch ends and :attr:`failure` says why, so the
    owner can stop the run with one line instead of retrying a restart that cannot work (a
    port taken by another program) forever.
    """

    def __init__(
        self,
        check: Callable[[], object],
        name: str,
        interval: float = 1.0,
        *,
        give_up_after: int = 5,
        max_backoff: float = 16.0,
    ):
        if give_up_after < 1:
            raise ValueError(f"give_up_after must be >= 1, got {give_up_after}")
        self.check = check
        self.name = name
        self.interval = interval
        self.give_up_after = give_up_after
        self.max_backoff = max_backoff
        self.failure: str | None = None
        self._stop_event = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Watchdog:
        if self._thread is None or not self._thread.is_alive():
            self._stop_event.clear()
            self._thread = threading.Thread(target=self._watch, name=self.name, daemon=True)
            self._thread.start()
        return self

    @property
    def stopping(self) -> bool:
        return self._stop_event.is_set()

    @property
    def watching(self) -> bool:
        """Whether the watch thread runs (it ends on :meth:`stop` or when it gives up)."""
        return self._thread is not None and self._thread.is_alive()

    def _watch(self) -> None:
        failures, delay = 0, self.interval
        while not self._stop_event.wait(delay):
            try:
                self.check()
            except Exception as exc:
                failures += 1
                if failures >= self.give_up_after:
                    self.failure = f"{self.name} gave up after {failures} failed restarts: {exc}"
                    logger.error("%s", self.failure)
                    return
                delay = min(self.interval * 2 ** (failures - 1), self.max_backoff)
                logger.warning(
                    "%s could not restart a child process (%d/%d; next try in %.0f s): %s",
                    self.name,
                    failures,
                    self.give_up_after,
                    delay,
                    exc,
                )
            else:
                failures, delay = 0, self.interval

    def stop(self, timeout: float = 10.0) -> None:
        self._stop_event.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
