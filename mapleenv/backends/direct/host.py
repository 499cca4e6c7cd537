"""A Node child process running Showdown battles in-process (``mapleenv/js/sim_host.js``).

The host speaks the simulator's stream protocol, each line prefixed with a battle id:
``SimHost.send(bid, [">p1 move 1", ">p2 switch 3"])`` returns the simulator messages those
lines produced (``("update", "...")``, ``("sideupdate", "p1\\n|request|...")``, ``("end", ...)``).
The child dies with its parent (stdin EOF, and ``PR_SET_PDEATHSIG`` on Linux). A host
started with ``listen=`` also serves other processes through :class:`SimHostConnection`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from mapleenv.showdown.package import (
    SETUP_HINT,
    NodeNotFoundError,
    ShowdownNotInstalledError,
    find_node,
    find_showdown,
)
from mapleenv.showdown.process import close_pipe_child, kill_now, spawn
from mapleenv.showdown.snapshot import host_died, node_command, refused_hint

logger = logging.getLogger(__name__)

HOST_SCRIPT = Path(__file__).resolve().parents[2] / "js" / "sim_host.js"


class SimHostError(RuntimeError):
    """The simulator host is missing, died, or reported an error."""


class _Channel:
    """Request/reply framing of the host protocol over a pair of file descriptors.

    Every read is cut into its complete frames at once (one decode and one split per
    read, not per frame); the incomplete tail waits in ``_buffer``.
    """

    timeout: float
    _in_fd: int
    _out_fd: int
    _buffer: bytes = b""
    _frames: list[str] | tuple[str, ...] = ()  # complete frames read, not yet returned
    _next: int = 0  # index of the next frame to return

    def send(self, bid: str, lines: list[str]) -> list[tuple[str, str]]:
        """Write ``lines`` for battle ``bid``; return the messages they produced, in order."""
        payload = "".join([f"{bid} {line}\n" for line in lines]).encode()
        try:
            os.write(self._in_fd, payload)
        except OSError as err:
            raise self._died() from err
        messages: list[tuple[str, str]] = []
        acks = 0
        expected = len(lines)
        while acks < expected:
            frame_bid, kind, data = self._next_frame(bid)
            if frame_bid != bid:
                raise SimHostError(f"simulator host replied for battle {frame_bid}, expected {bid}")
            if kind == "ack":
                acks += 1
            elif kind == "hosterror":
                raise SimHostError(f"simulator error in battle {bid}: {data}")
            else:
                messages.append((kind, data))
        return messages

    def _next_frame(self, waiting_for: str) -> tuple[str, str, str]:
        if self._next >= len(self._frames):
            self._read_frames(waiting_for)
        frame = self._frames[self._next]
        self._next += 1
        frame_bid, _, rest = frame.partition("\n")
        kind, _, data = rest.partition("\n")
        return frame_bid, kind, data

    def _read_frames(self, waiting_for: str) -> None:
        """Read until at least one frame is complete; queue every complete frame."""
        buffer = self._buffer
        end = buffer.rfind(b"\n\n")
        while end < 0:
            if not select.select([self._out_fd], [], [], self.timeout)[0]:
                raise SimHostError(
                    f"simulator host gave no reply for {waiting_for} in {self.timeout} s"
                )
            try:
                chunk = os.read(self._out_fd, 1 << 16)
            except OSError as err:
                raise self._died() from err
            if not chunk:
                raise self._died()
            buffer += chunk
            end = buffer.rfind(b"\n\n")
        # "\n\n" ends a frame and never occurs inside one (sim_host.js)
        self._frames = buffer[:end].decode().split("\n\n")
        self._next = 0
        self._buffer = buffer[end + 2 :]

    def _died(self) -> SimHostError:
        raise NotImplementedError


class SimHost(_Channel):
    """One ``node sim_host.js`` child; battles are multiplexed on it by id.

    ``showdown_dir`` is the npm package directory (default: ``find_showdown()``,
    which raises a clear error when it is missing; so does ``find_node`` for Node). With
    ``listen`` (a Unix socket path) the host also serves :class:`SimHostConnection` clients
    of other processes. On Linux the child gets SIGKILL when the thread that started it
    exits (``PR_SET_PDEATHSIG``): start hosts from the main thread or a long-lived one.
    """

    def __init__(
        self,
        showdown_dir: str | os.PathLike | None = None,
        node: str | None = None,
        timeout: float = 120.0,
        listen: str | os.PathLike | None = None,
    ):
        self.timeout = timeout
        self.listen = str(listen) if listen is not None else None
        self.showdown_dir = Path(showdown_dir) if showdown_dir is not None else find_showdown()
        if not (self.showdown_dir / "dist" / "sim" / "index.js").is_file():
            raise ShowdownNotInstalledError(
                f"{self.showdown_dir} is not the pokemon-showdown npm package (no "
                f"dist/sim/index.js); {SETUP_HINT}"
            )
        node = node or find_node()
        listen_args = ["--listen", self.listen] if self.listen is not None else []
        cmd = node_command(node, HOST_SCRIPT, self.showdown_dir, *listen_args)
        self._cmd, self._started = cmd, time.monotonic()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the child)
        try:
            self._proc = spawn(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, bufsize=0
            )
        except OSError as exc:
            self._stderr.close()
            raise NodeNotFoundError(f"cannot run Node.js ({node}): {exc}; {SETUP_HINT}") from exc
        self._in_fd = self._proc.stdin.fileno()
        self._out_fd = self._proc.stdout.fileno()
        self._buffer = b""
        if self.listen is not None:
            try:
                frame = self._next_frame("the socket listener")
            except SimHostError:
                self.close()
                raise
            if frame[:2] != ("-", "listening"):
                self.close()
                raise SimHostError(f"simulator host did not start listening: {frame!r}")
        logger.debug("simulator host pid %d started", self._proc.pid)

    @property
    def pid(self) -> int:
        return self._proc.pid

    def alive(self) -> bool:
        return self._proc.poll() is None

    def _died(self) -> SimHostError:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=1)
        self._stderr.seek(0)
        tail = self._stderr.read()[-2000:].decode(errors="replace")
        code = self._proc.returncode
        snapshot = host_died(self._cmd, time.monotonic() - self._started, code)
        return SimHostError(
            f"simulator host (pid {self._proc.pid}) died with code {code}"
            f"{refused_hint(tail) or snapshot}; stderr tail:\n{tail}"
        )

    def kill(self) -> None:
        """SIGKILL the child (a hung or stopped host does not read its stdin)."""
        kill_now(self._proc)

    def close(self) -> None:
        """Stop the child (EOF on stdin, then SIGTERM/SIGKILL if it lingers)."""
        close_pipe_child(self._proc)
        self._stderr.close()
        if self.listen is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.listen)

    def __enter__(self) -> SimHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            proc.kill()


class SimHostConnection(_Channel):
    """A client of a listening :class:`SimHost` (possibly started by another process)."""

    def __init__(self, address: str, pid: int | None = None, timeout: float = 120.0):
        self.address = address
        self.host_pid = pid
        self.timeout = timeout
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.connect(address)
        except OSError as exc:
            self._sock.close()
            raise SimHostError(f"cannot connect to the simulator host at {address}: {exc}") from exc
        self._in_fd = self._out_fd = self._sock.fileno()
        self._buffer = b""

    @property
    def pid(self) -> int | None:
        return self.host_pid

    def alive(self) -> bool:
        if self._sock.fileno() < 0:
            return False
        if self.host_pid is None:
            return True
        try:
            os.kill(self.host_pid, 0)
        except OSError:
            return False
        return True

    def _died(self) -> SimHostError:
        return SimHostError(f"simulator host at {self.address} (pid {self.host_pid}) is gone")

    def close(self) -> None:
        """Close the connection (the host drops this client's battles)."""
        self._sock.close()

    def __enter__(self) -> SimHostConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
