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
import socket
from pathlib import Path

from mapleenv.showdown.child import Closing, NodeChild, Reader
from mapleenv.showdown.package import (
    SETUP_HINT,
    NodeNotFoundError,
    ShowdownNotInstalledError,
    find_node,
    find_showdown,
)
from mapleenv.showdown.snapshot import node_command

logger = logging.getLogger(__name__)

HOST_SCRIPT = Path(__file__).resolve().parents[2] / "js" / "sim_host.js"


class SimHostError(RuntimeError):
    """The simulator host is missing, died, or reported an error."""


class _Channel:
    """Request/reply framing of the host protocol over a pair of file descriptors.

    Every read is cut into its complete frames at once (one decode and one split per
    read, not per frame); the incomplete tail waits in the :class:`Reader`.
    """

    timeout: float
    _reader: Reader
    _frames: list[str] | tuple[str, ...] = ()  # complete frames read, not yet returned
    _next: int = 0  # index of the next frame to return

    def send(self, bid: str, lines: list[str]) -> list[tuple[str, str]]:
        """Write ``lines`` for battle ``bid``; return the messages they produced, in order."""
        self._write("".join([f"{bid} {line}\n" for line in lines]).encode())
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
            # "\n\n" ends a frame and never occurs inside one (sim_host.js)
            read = self._reader.read_through(b"\n\n", self.timeout, waiting_for)
            self._frames = read.decode().split("\n\n")
            self._next = 0
        frame = self._frames[self._next]
        self._next += 1
        frame_bid, _, rest = frame.partition("\n")
        kind, _, data = rest.partition("\n")
        return frame_bid, kind, data

    def _write(self, payload: bytes) -> None:
        raise NotImplementedError


class SimHost(_Channel, NodeChild):
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
        try:
            NodeChild.__init__(self, cmd, name="simulator host", error=SimHostError)
        except OSError as exc:
            raise NodeNotFoundError(f"cannot run Node.js ({node}): {exc}; {SETUP_HINT}") from exc
        self._reader = self.reader
        if self.listen is not None:
            try:
                frame = self._next_frame("the socket listener")
            except SimHostError:
                self.close()
                raise
            if frame[:2] != ("-", "listening"):
                self.close()
                raise SimHostError(f"simulator host did not start listening: {frame!r}")
        logger.debug("simulator host pid %d started", self.pid)

    _write = NodeChild.write

    def close(self) -> None:
        """Stop the child (EOF on stdin, then SIGTERM/SIGKILL if it lingers)."""
        NodeChild.close(self)
        if self.listen is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.listen)


class SimHostConnection(_Channel, Closing):
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
        self._reader = Reader(self._sock.fileno(), "simulator host", SimHostError, self._died)

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

    def _write(self, payload: bytes) -> None:
        try:
            self._sock.sendall(payload)
        except OSError as err:
            raise self._died() from err

    def _died(self) -> SimHostError:
        return SimHostError(f"simulator host at {self.address} (pid {self.host_pid}) is gone")

    def close(self) -> None:
        """Close the connection (the host drops this client's battles)."""
        self._sock.close()
