"""A Node child running ``mapleenv/js/search_host.js``: decision-time search for one process.

One JSON object a line each way (the script's docstring has the protocol). The child dies
with its parent (stdin EOF and ``PR_SET_PDEATHSIG``); a reply that does not come within
``timeout`` seconds, or a dead child, is a :class:`SearchHostError`.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from mapleenv.showdown import find_node, find_showdown
from mapleenv.showdown.process import close_pipe_child, kill_now, spawn
from mapleenv.showdown.snapshot import host_died, node_command

SEARCH_SCRIPT = Path(__file__).resolve().parents[1] / "js" / "search_host.js"


class SearchHostError(RuntimeError):
    """The search host is missing, died, hung, or refused a request."""


class SearchRefused(SearchHostError):
    """The host answered a request with an error (a view it cannot build a world from):
    that request failed, the host serves on."""


class SearchHost:
    """One ``node search_host.js`` child; requests are answered one at a time, in order."""

    def __init__(self, timeout: float = 30.0, showdown_dir: str | os.PathLike | None = None):
        self.timeout = timeout
        showdown = Path(showdown_dir) if showdown_dir is not None else find_showdown()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the child)
        self._cmd = node_command(find_node(), SEARCH_SCRIPT, showdown)
        self._started = time.monotonic()
        try:
            self._proc = spawn(
                self._cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                bufsize=0,
            )
        except OSError as exc:
            self._stderr.close()
            raise SearchHostError(f"cannot start the search host: {exc}") from exc
        self._buffer = b""
        self._next_id = 0
        self._pending = ""

    @property
    def pid(self) -> int:
        return self._proc.pid

    def alive(self) -> bool:
        return self._proc.poll() is None

    def request(self, cmd: str, **fields: Any) -> dict[str, Any]:
        """Send one request; its reply (``SearchHostError`` on an error reply)."""
        self.submit(cmd, **fields)
        return self.collect()

    def submit(self, cmd: str, **fields: Any) -> None:
        """Send one request without waiting: :meth:`collect` reads its reply, so several
        hosts can search side by side."""
        self._next_id += 1
        self._pending = cmd
        line = json.dumps({"id": self._next_id, "cmd": cmd, **fields}) + "\n"
        try:
            os.write(self._proc.stdin.fileno(), line.encode())
        except OSError as err:
            raise self._died() from err

    def collect(self) -> dict[str, Any]:
        """The reply to the last :meth:`submit` (``SearchHostError`` on an error reply)."""
        while True:
            reply = json.loads(self._read_line())
            if reply.get("id") == self._next_id:
                break
        if "error" in reply:
            raise SearchRefused(f"search host refused {self._pending}: {reply['error']}")
        return reply

    def _read_line(self) -> bytes:
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buffer:
            if not select.select([fd], [], [], self.timeout)[0]:
                raise SearchHostError(f"search host gave no reply in {self.timeout} s")
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError as err:
                raise self._died() from err
            if not chunk:
                raise self._died()
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _died(self) -> SearchHostError:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=1)
        self._stderr.seek(0)
        tail = self._stderr.read()[-300:].decode(errors="replace").strip().splitlines()
        last = tail[-1] if tail else ""
        code = self._proc.returncode
        hint = host_died(self._cmd, time.monotonic() - self._started, code)
        return SearchHostError(
            f"search host (pid {self._proc.pid}) died with code {code}{hint}"
            + (f": {last}" if last else "")
        )

    def kill(self) -> None:
        kill_now(self._proc)

    def close(self) -> None:
        """Stop the child (EOF on stdin, then SIGTERM/SIGKILL if it lingers)."""
        close_pipe_child(self._proc)
        if not self._stderr.closed:
            self._stderr.close()

    def __enter__(self) -> SearchHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            proc.kill()
