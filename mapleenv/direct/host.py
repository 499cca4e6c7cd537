"""A Node child process running Showdown battles in-process (``mapleenv/js/sim_host.js``).

The host speaks the simulator's stream protocol, each line prefixed with a battle id:
``SimHost.send(bid, [">p1 move 1", ">p2 switch 3"])`` returns the simulator messages those
lines produced (``("update", "...")``, ``("sideupdate", "p1\\n|request|...")``, ``("end", ...)``).
The child dies with its parent (stdin EOF, and ``PR_SET_PDEATHSIG`` on Linux).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import select
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from mapleenv.server import (
    SETUP_HINT,
    NodeNotFoundError,
    ShowdownNotInstalledError,
    find_node,
    find_showdown,
)

logger = logging.getLogger(__name__)

HOST_SCRIPT = Path(__file__).resolve().parent.parent / "js" / "sim_host.js"
_PR_SET_PDEATHSIG = 1
NODE_FLAGS: tuple[str, ...] = ()  # extra flags for the host's node (see docs/benchmarks.md)


class SimHostError(RuntimeError):
    """The simulator host is missing, died, or reported an error."""


_libc_prctl = None
if sys.platform.startswith("linux"):
    with contextlib.suppress(OSError, AttributeError):
        _libc_prctl = ctypes.CDLL(None, use_errno=True).prctl


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if _libc_prctl is not None:
        _libc_prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class SimHost:
    """One ``node sim_host.js`` child; battles are multiplexed on it by id.

    ``showdown_dir`` is the npm package directory (default: ``mapleenv.server.find_showdown``,
    which raises a clear error when it is missing; so does ``find_node`` for Node).
    """

    def __init__(
        self,
        showdown_dir: str | os.PathLike | None = None,
        node: str | None = None,
        timeout: float = 120.0,
    ):
        self.timeout = timeout
        self.showdown_dir = Path(showdown_dir) if showdown_dir is not None else find_showdown()
        if not (self.showdown_dir / "dist" / "sim" / "index.js").is_file():
            raise ShowdownNotInstalledError(
                f"{self.showdown_dir} is not the pokemon-showdown npm package (no "
                f"dist/sim/index.js); {SETUP_HINT}")
        node = node or find_node()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the child)
        try:
            self._proc = subprocess.Popen(
                [node, *NODE_FLAGS, str(HOST_SCRIPT), str(self.showdown_dir)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                bufsize=0,
                preexec_fn=_die_with_parent if _libc_prctl is not None else None,
            )
        except OSError as exc:
            self._stderr.close()
            raise NodeNotFoundError(f"cannot run Node.js ({node}): {exc}; {SETUP_HINT}") from exc
        self._in_fd = self._proc.stdin.fileno()
        self._out_fd = self._proc.stdout.fileno()
        self._buffer = b""
        logger.debug("simulator host pid %d started", self._proc.pid)

    @property
    def pid(self) -> int:
        return self._proc.pid

    def alive(self) -> bool:
        return self._proc.poll() is None

    def send(self, bid: str, lines: list[str]) -> list[tuple[str, str]]:
        """Write ``lines`` for battle ``bid``; return the messages they produced, in order."""
        payload = "".join(f"{bid} {line}\n" for line in lines).encode()
        try:
            os.write(self._in_fd, payload)
        except (BrokenPipeError, OSError) as err:
            raise self._died() from err
        messages: list[tuple[str, str]] = []
        acks = 0
        while acks < len(lines):
            end = self._buffer.find(b"\n\n")
            if end < 0:
                if not select.select([self._out_fd], [], [], self.timeout)[0]:
                    raise SimHostError(
                        f"simulator host gave no reply for battle {bid} in {self.timeout} s"
                    )
                chunk = os.read(self._out_fd, 1 << 16)
                if not chunk:
                    raise self._died()
                self._buffer += chunk
                continue
            frame = self._buffer[:end].decode()
            self._buffer = self._buffer[end + 2 :]
            frame_bid, _, rest = frame.partition("\n")
            kind, _, data = rest.partition("\n")
            if frame_bid != bid:
                raise SimHostError(f"simulator host replied for battle {frame_bid}, expected {bid}")
            if kind == "ack":
                acks += 1
            elif kind == "hosterror":
                raise SimHostError(f"simulator error in battle {bid}: {data}")
            else:
                messages.append((kind, data))
        return messages

    def _died(self) -> SimHostError:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=1)
        self._stderr.seek(0)
        tail = self._stderr.read()[-2000:].decode(errors="replace")
        return SimHostError(
            f"simulator host (pid {self._proc.pid}) died with code {self._proc.returncode}; "
            f"stderr tail:\n{tail}"
        )

    def close(self) -> None:
        """Stop the child (EOF on stdin, then SIGTERM/SIGKILL if it lingers)."""
        if self._proc.poll() is None:
            with contextlib.suppress(OSError):
                self._proc.stdin.close()
            try:
                self._proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self._proc.terminate()
                try:
                    self._proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait()
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None and not stream.closed:
                stream.close()
        self._stderr.close()

    def __enter__(self) -> SimHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            proc.kill()
