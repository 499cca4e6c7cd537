"""Shared simulator hosts: a few listening Node hosts serving the battles of many envs.

One host per env worker works, but every host is a separate V8 with its own JIT, heap
and caches, cold each time the OS switches to it. K hosts (one per core) serving all
workers' battles over Unix sockets cost less Node CPU per step and a third of the memory
(docs/results/benchmarks.md). :class:`SimHostPool` runs them in the parent; workers find theirs
with :func:`claim_host` (round robin through a locked counter file), which
:class:`~mapleenv.backends.direct.backend.DirectBackend` does when given ``host_pool=pool.spec``.
``mapleenv.make_vector_env(backend="direct")`` wires it up.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from mapleenv.backends.direct.host import SimHost, SimHostConnection, SimHostError
from mapleenv.showdown.process import Watchdog, forget_at_exit, stop_at_exit

logger = logging.getLogger(__name__)

DIR_PREFIX = "maple-sim-"
OWNER = "owner"  # "<pid> <process start time>" of the process that made the directory


def _owner_stamp(process: psutil.Process) -> str:
    return f"{process.pid} {process.create_time():.3f}"


def _owner_alive(directory: Path) -> bool:
    """Whether the process that made ``directory`` still runs (a pid reused by another
    process does not count). A directory without an owner file counts as alive while it is
    young (its maker may be writing it now) or any of its hosts runs."""
    try:
        stamp = (directory / OWNER).read_text().split()
    except OSError:
        if time.time() - directory.stat().st_mtime < 60:
            return True
        pids = [int(p.read_text()) for p in directory.glob("host-*.pid") if p.read_text().isdigit()]
        return any(psutil.pid_exists(pid) for pid in pids)
    try:
        return _owner_stamp(psutil.Process(int(stamp[0]))) == " ".join(stamp)
    except (psutil.NoSuchProcess, ValueError, IndexError):
        return False


def remove_stale_pool_dirs(root: str | os.PathLike | None = None) -> list[Path]:
    """Delete the socket directories of pools whose process is gone (a trainer killed with
    SIGKILL cannot remove its own); returns them."""
    root = Path(root or tempfile.gettempdir())
    stale = [d for d in root.glob(f"{DIR_PREFIX}*") if d.is_dir() and not _owner_alive(d)]
    for directory in stale:
        shutil.rmtree(directory, ignore_errors=True)
    if stale:
        logger.info("removed %d stale simulator socket dir(s) in %s", len(stale), root)
    return stale


class SimHostPool:
    """``size`` listening :class:`SimHost` processes (default: one per core)."""

    def __init__(
        self,
        size: int | None = None,
        showdown_dir: str | os.PathLike | None = None,
        health_timeout: float | None = 10.0,
    ):
        """``health_timeout``: the watchdog kills (and so restarts) a host that does not
        answer a ping within this many seconds (hung, SIGSTOPped); None = no ping."""
        self.health_timeout = health_timeout
        self.size = size or os.cpu_count() or 1
        if self.size < 1:
            raise ValueError(f"a host pool needs at least one host, got {size}")
        self.showdown_dir = showdown_dir
        self.directory: Path | None = None
        self.hosts: list[SimHost | None] = []
        self.restarts = 0
        self._lock = threading.RLock()
        self._watchdog: Watchdog | None = None

    def _socket(self, i: int) -> Path:
        assert self.directory is not None
        return self.directory / f"host-{i}.sock"

    def _launch(self, i: int) -> SimHost:
        host = SimHost(self.showdown_dir, listen=self._socket(i))
        (self.directory / f"host-{i}.pid").write_text(str(host.pid))
        return host

    def start(self) -> SimHostPool:
        """Start the hosts (each is listening when this returns)."""
        with self._lock:
            if self.directory is None:
                remove_stale_pool_dirs()
                self.directory = Path(tempfile.mkdtemp(prefix=DIR_PREFIX))
                (self.directory / OWNER).write_text(_owner_stamp(psutil.Process()))
                (self.directory / "next").write_text("0")
                stop_at_exit(self)
            try:
                while len(self.hosts) < self.size:
                    self.hosts.append(self._launch(len(self.hosts)))
            except BaseException:
                self.stop()
                raise
        return self

    @property
    def spec(self) -> dict[str, Any]:
        """Picklable description for workers (``DirectBackend(host_pool=spec)``)."""
        if self.directory is None:
            raise RuntimeError("start() the pool first")
        return {"dir": str(self.directory), "size": self.size}

    def _responsive(self, i: int) -> bool:
        """Whether host ``i`` answers a ping (a no-op line) within ``health_timeout``."""
        try:
            with SimHostConnection(str(self._socket(i)), timeout=self.health_timeout) as conn:
                conn.send("health", ["destroy"])
            return True
        except SimHostError:
            return False

    def ensure_running(self) -> int:
        """Restart dead hosts on their socket, killing hung ones first (no answer to a
        ping within ``health_timeout``); returns how many were restarted."""
        restarted = 0
        with self._lock:
            for i, host in enumerate(self.hosts):
                if (
                    host is not None
                    and self.health_timeout is not None
                    and host.alive()
                    and not self._responsive(i)
                ):
                    logger.warning(
                        "simulator host %d (pid %d) did not answer a ping in %.0f s; killing it",
                        i,
                        host.pid,
                        self.health_timeout,
                    )
                    host.kill()
                if host is not None and not host.alive():
                    logger.warning("simulator host %d (pid %d) died; restarting", i, host.pid)
                    host.close()
                    self.hosts[i] = self._launch(i)
                    restarted += 1
            self.restarts += restarted
        return restarted

    @property
    def failure(self) -> str | None:
        """Why the watchdog gave up restarting a host (``None``: it has not)."""
        return self._watchdog.failure if self._watchdog is not None else None

    def start_watchdog(self, interval: float = 1.0) -> None:
        """Check the hosts every ``interval`` s in a daemon thread (restart dead ones)."""
        if self._watchdog is None:
            self._watchdog = Watchdog(self.ensure_running, "maple-sim-watchdog", interval)
            self._watchdog.start()

    def stop(self) -> None:
        """Stop every host and remove the pool directory; idempotent."""
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            watchdog.stop()
        with self._lock:
            for host in self.hosts:
                if host is not None:
                    host.close()
            self.hosts = []
            if self.directory is not None:
                shutil.rmtree(self.directory, ignore_errors=True)
                self.directory = None
            forget_at_exit(self)

    def __enter__(self) -> SimHostPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def claim_host(spec: dict[str, Any]) -> tuple[str, int | None]:
    """Socket path and pid of the next host of a pool, round robin across processes."""
    directory = Path(spec["dir"])
    with open(directory / "next", "r+") as counter:
        fcntl.flock(counter, fcntl.LOCK_EX)
        index = int(counter.read() or 0)
        counter.seek(0)
        counter.write(str(index + 1))
        counter.truncate()
    i = index % int(spec["size"])
    try:
        pid: int | None = int((directory / f"host-{i}.pid").read_text())
    except (OSError, ValueError):
        pid = None
    return str(directory / f"host-{i}.sock"), pid
