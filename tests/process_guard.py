"""The unit tier starts no process, checked: while a ``unit`` test sets up and runs,
every way to start a process fails with :class:`ProcessStartBlocked`.

Why: ``make test-fast`` promises no simulator, server or subprocess; a test that
starts one belongs in ``integration``. Patching ``fork_exec`` (``subprocess``'s copy and
``_posixsubprocess``'s) catches ``subprocess`` (and so asyncio's subprocesses) and
multiprocessing's spawn/forkserver starts; ``os.fork``/``posix_spawn``/``system`` catch
the rest. Each attempt is also recorded, so code that swallows the exception still
fails the test (conftest checks).
"""

from __future__ import annotations

import _posixsubprocess
import multiprocessing.process
import os
import subprocess
from collections.abc import Callable
from typing import Any

_OS_STARTERS = ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system")


class ProcessStartBlocked(RuntimeError):
    """A ``unit`` test tried to start a process."""


class ProcessGuard:
    """Replaces the process starters while active; ``attempts`` names what was tried."""

    def __init__(self) -> None:
        self.attempts: list[str] = []
        self._saved: list[tuple[Any, str, Any]] = []

    def _blocker(self, name: str) -> Callable[..., Any]:
        def blocked(*args: Any, **kwargs: Any) -> Any:
            what = f"{name}({args[0]!r})" if args else name
            self.attempts.append(what)
            raise ProcessStartBlocked(
                f"a unit test may not start a process ({what}); mark the test "
                "@pytest.mark.integration or make it need no process"
            )

        return blocked

    def _patch(self, owner: Any, attr: str, name: str) -> None:
        if hasattr(owner, attr):
            self._saved.append((owner, attr, getattr(owner, attr)))
            setattr(owner, attr, self._blocker(name))

    def install(self) -> None:
        """Block every process start until :meth:`uninstall`."""
        self.attempts.clear()
        self._patch(_posixsubprocess, "fork_exec", "subprocess")
        self._patch(subprocess, "_fork_exec", "subprocess")
        self._patch(multiprocessing.process.BaseProcess, "start", "multiprocessing.Process.start")
        for attr in _OS_STARTERS:
            self._patch(os, attr, f"os.{attr}")

    def uninstall(self) -> None:
        """Put the real starters back."""
        while self._saved:
            owner, attr, original = self._saved.pop()
            setattr(owner, attr, original)


GUARD = ProcessGuard()
