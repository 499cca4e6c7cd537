"""One Node child of Maple's: the simulator host, the search host, the ceiling benchmark and
the team validator all run through :class:`NodeChild`.

It spawns the child through the supervisor (:func:`mapleenv.showdown.process.spawn`: it
dies with its parent), reads its stdout with deadlines (:class:`Reader`, also used on a
socket), keeps its stderr in a file for the tail an error quotes, says why it died (with
the startup snapshot's hints, :func:`mapleenv.showdown.snapshot_trust.host_died`), and closes
or kills it through the supervisor, the one place that reaps.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Self

from mapleenv.showdown.process import close_pipe_child, kill_now, reap, spawn
from mapleenv.showdown.snapshot_trust import host_died, refused_hint

TAIL_CHARS = 2000  # of stderr quoted when a child died


class Reader:
    """Bounded reads from a file descriptor (a child's stdout or a socket): each read waits
    at most ``timeout`` seconds for what it needs, then raises ``error`` naming ``name``;
    end of file or a read error raises what ``died()`` returns."""

    def __init__(
        self,
        fd: int,
        name: str,
        error: type[Exception],
        died: Callable[[], BaseException],
    ):
        self.fd, self.name, self.error, self._died = fd, name, error, died
        self._buffer = b""
        self._lines: list[bytes] = []  # complete lines read, not yet returned (reversed)

    def read_through(self, sep: bytes, timeout: float, waiting_for: str = "") -> bytes:
        """Everything up to the last ``sep`` read, once at least one is there (one read may
        bring many records: the caller splits them); the rest waits for the next call."""
        buffer = self._buffer
        end = buffer.rfind(sep)
        deadline = time.monotonic() + timeout
        while end < 0:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                what = f" for {waiting_for}" if waiting_for else ""
                raise self.error(f"{self.name} gave no reply{what} in {timeout} s")
            try:
                chunk = os.read(self.fd, 1 << 16)
            except OSError as err:
                raise self._died() from err
            if not chunk:
                raise self._died()
            buffer += chunk
            end = buffer.rfind(sep)
        self._buffer = buffer[end + len(sep) :]
        return buffer[:end]

    def line(self, timeout: float, waiting_for: str = "") -> bytes:
        """The next line (without its newline)."""
        if not self._lines:
            self._lines = self.read_through(b"\n", timeout, waiting_for).split(b"\n")[::-1]
        return self._lines.pop()

    def read_to_end(self, timeout: float) -> bytes:
        """All that is left until end of file, within ``timeout`` seconds."""
        chunks, deadline = [self._buffer], time.monotonic() + timeout
        self._buffer = b""
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise self.error(f"{self.name} did not finish in {timeout} s")
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


class Closing:
    """``with`` closes it: for the owners of a child or a connection."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class NodeChild(Closing):
    """One Node process with pipes (see the module docs): ``error`` is the exception its
    reads, writes and death raise, ``name`` what their messages call it. ``OSError`` when it
    cannot be started (the caller says which setup step is missing)."""

    def __init__(
        self,
        cmd: Sequence[str],
        *,
        name: str,
        error: type[Exception] = RuntimeError,
        cwd: str | os.PathLike | None = None,
    ):
        self.cmd, self.name, self.error = list(cmd), name, error
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the child)
        try:
            self._proc = spawn(
                self.cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                bufsize=0,
                cwd=cwd,
            )
        except OSError:
            self._stderr.close()
            raise
        self._started = time.monotonic()
        self.pid: int = self._proc.pid
        self.reader = Reader(self._proc.stdout.fileno(), name, error, self.died)

    @property
    def returncode(self) -> int | None:
        """Its exit code once it has ended and been reaped, else None."""
        return self._proc.returncode

    def alive(self) -> bool:
        return self._proc.poll() is None

    def write(self, data: bytes) -> None:
        """Write all of ``data`` to its stdin (what :meth:`died` says when it is gone)."""
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._proc.stdin.fileno(), view) :]
        except (OSError, ValueError) as err:  # ValueError: stdin already closed
            raise self.died() from err

    def communicate(self, data: bytes, timeout: float) -> bytes:
        """For a child that reads all its input, answers and exits: write ``data``, close
        its stdin, and return its stdout; ``error`` (one line) when it fails or hangs."""
        try:
            self.write(data)
        except self.error:  # it ended before reading all: why, in one line
            raise self.error(self.death()) from None
        with contextlib.suppress(OSError):
            self._proc.stdin.close()
        out = self.reader.read_to_end(timeout)
        if reap(self._proc, timeout) != 0:
            raise self.error(self.death())
        return out

    def tail(self, chars: int = TAIL_CHARS) -> str:
        """The last ``chars`` of what it wrote on stderr."""
        if self._stderr.closed:
            return ""
        self._stderr.seek(0, os.SEEK_END)
        self._stderr.seek(max(0, self._stderr.tell() - chars))
        return self._stderr.read().decode(errors="replace")

    def death(self) -> str:
        """One line: its exit code, the snapshot's hint, its last stderr line that says
        something (Node ends a crash with its own version line)."""
        code = reap(self._proc, 1.0)  # before the tail: what it wrote as it ended
        tail = self.tail()
        hint = refused_hint(tail) or host_died(self.cmd, time.monotonic() - self._started, code)
        said = [x for x in tail.splitlines() if x.strip() and not x.startswith("Node.js v")]
        return f"{self.name} (pid {self.pid}) died with code {code}{hint}" + (
            f": {said[-1].strip()}" if said else ""
        )

    def died(self) -> Exception:
        """The ``error`` for a child that is gone: :meth:`death`, then its stderr tail."""
        line, tail = self.death(), self.tail().strip()
        return self.error(f"{line}\nstderr tail:\n{tail}" if "\n" in tail else line)

    def kill(self) -> None:
        """SIGKILL it (a hung or stopped child does not read its stdin)."""
        kill_now(self._proc)

    def close(self) -> None:
        """Stop it (EOF on stdin, then SIGTERM/SIGKILL if it lingers)."""
        close_pipe_child(self._proc)
        if not self._stderr.closed:
            self._stderr.close()

    def __del__(self) -> None:
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            proc.kill()
