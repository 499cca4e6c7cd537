"""One managed local ``pokemon-showdown`` server: :class:`ShowdownServer` (start, warm-up,
health ping, kill, restart on the same port, stop). Several of them with a watchdog:
:class:`mapleenv.showdown.pool.ServerPool`.

A server runs the npm package's prebuilt server
(``node pokemon-showdown start --no-security --skip-build PORT``) in its own process
group, bound to 127.0.0.1, in a server directory with a config written by Maple
(:mod:`mapleenv.showdown.config`).
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from poke_env.ps_client.server_configuration import ServerConfiguration
from websockets.exceptions import WebSocketException
from websockets.sync.client import connect as ws_connect

from mapleenv.showdown.config import LINKED_ENTRIES, prepare_server_dir
from mapleenv.showdown.package import (
    HOST,
    ServerStartError,
    ShowdownError,
    configuration,
    find_node,
    find_showdown,
    free_port,
    listens_on,
    port_holder,
    port_is_open,
)
from mapleenv.showdown.process import forget_at_exit, kill, spawn, stop_at_exit, terminate

logger = logging.getLogger(__name__)

_LISTEN_ERROR = re.compile(r"CRASH: Error: listen E[A-Z]+")
# loaded into every server: no git run on the checkout that holds the package (the script says why)
PRELOAD = Path(__file__).resolve().parents[1] / "js" / "server_preload.js"


def _tail(path: Path | None, lines: int = 30) -> str:
    if path is None:
        return "<no log>"
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "<no log>"


class ShowdownServer:
    """One managed ``pokemon-showdown`` process on 127.0.0.1.

    The port is chosen on first start (free port unless given) and kept across
    restarts, so clients can reconnect to the same URL. Node runs in its own process
    group; :meth:`stop` terminates the whole group, an ``atexit`` hook stops servers
    still running, and on Linux Node gets SIGKILL if the thread that started it dies
    (``PR_SET_PDEATHSIG``) -- so start servers from the main thread or a long-lived
    one.

    Args:
        port: fixed port (default: a free one).
        log_dir: keep the server directory (``showdown-PORT/``: config, Showdown's own
            logs) and the process output (``showdown-PORT.log``) there; default: a
            temporary directory removed by :meth:`stop`.
        start_timeout: seconds to wait for the port and for the warm-up login.
        config: extra ``config.js`` values over :data:`DEFAULT_CONFIG`.
        warm: log in once at start (see :meth:`warm_up`).
    """

    def __init__(
        self,
        port: int | None = None,
        log_dir: str | Path | None = None,
        *,
        start_timeout: float = 60.0,
        config: dict[str, Any] | None = None,
        warm: bool = True,
    ):
        self._port = port
        self._port_pinned = port is not None
        self.log_dir = Path(log_dir) if log_dir is not None else None
        self.start_timeout = start_timeout
        self.config_overrides = dict(config or {})
        self.warm = warm
        self._process: subprocess.Popen[bytes] | None = None
        self._server_dir: Path | None = None
        self._owns_dir = False
        self._log_file: Any = None
        self._lock = threading.RLock()
        self.restarts = 0

    # -- properties
    @property
    def port(self) -> int:
        if self._port is None:
            raise ShowdownError("server has no port yet: call start() first")
        return self._port

    @property
    def url(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def server_configuration(self) -> ServerConfiguration:
        return configuration(HOST, self.port)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def log_path(self) -> Path | None:
        if self._port is None:
            return None
        base = self.log_dir if self.log_dir is not None else self._server_dir
        return None if base is None else base / f"showdown-{self._port}.log"

    # -- lifecycle
    def is_alive(self) -> bool:
        """Whether the Node process is running (it may still be starting)."""
        return self._process is not None and self._process.poll() is None

    def start(self, wait: bool = True) -> ShowdownServer:
        """Start the server; with ``wait``, block until it accepts connections."""
        with self._lock:
            if not self.is_alive():
                self._launch()
            if wait:
                self.wait_until_ready()
            return self

    def wait_until_ready(self, warm_up: bool | None = None) -> None:
        """Wait for a launched server (and warm it up); retry on a new port if an
        unpinned one was taken."""
        with self._lock:
            for retry in range(3):
                try:
                    self._wait_ready()
                    self._port_pinned = True  # clients may now rely on this port
                    if self.warm if warm_up is None else warm_up:
                        self.warm_up()
                    return
                except ServerStartError:
                    self._terminate()
                    if self._port_pinned or retry == 2 or not self._port_taken():
                        raise
                    logger.warning("port %d was taken, retrying on a new port", self._port)
                    self._port = None
                    self._launch()

    def _listen_failed(self) -> bool:
        path = self.log_path
        return path is not None and _LISTEN_ERROR.search(_tail(path, 200)) is not None

    def _port_taken(self) -> bool:
        path = self.log_path
        return path is not None and "EADDRINUSE" in _tail(path)

    def _launch(self) -> None:
        node = find_node()
        package = find_showdown()
        if self._port is None:
            self._port = free_port()
        if port_is_open(self._port):
            raise ServerStartError(
                f"port {self._port} on {HOST} is already in use{port_holder(self._port)}"
            )
        if self._server_dir is None:
            if self.log_dir is not None:
                self._server_dir = self.log_dir / f"showdown-{self._port}"
            else:
                self._server_dir = Path(tempfile.mkdtemp(prefix="maple-showdown-"))
                self._owns_dir = True
        prepare_server_dir(self._server_dir, self._port, package, self.config_overrides)
        log_path = self.log_path
        assert log_path is not None
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_file = open(log_path, "ab")  # noqa: SIM115 (closed in _terminate)
        cmd = [
            node,
            "--preserve-symlinks",
            "--preserve-symlinks-main",
            "--require",
            str(PRELOAD),
            "pokemon-showdown",
            "start",
            "--no-security",
            "--skip-build",
            str(self._port),
        ]
        logger.info(
            "starting Showdown on %s:%d (dir %s, log %s)",
            HOST,
            self._port,
            self._server_dir,
            log_path,
        )
        self._process = spawn(
            cmd,
            cwd=self._server_dir,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        stop_at_exit(self)

    def _wait_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise ServerStartError(
                    f"Showdown exited with code {self._process.returncode} while starting on "
                    f"port {self._port}; log {self.log_path}:\n{_tail(self.log_path)}"
                )
            # Its own listener: a program that took the port after the check in _launch
            # would accept connections too, and then Node fails with EADDRINUSE.
            if listens_on(self._process.pid, self.port):
                logger.info("Showdown ready on %s (pid %d)", self.url, self._process.pid)
                return
            if self._listen_failed():  # crashguard keeps the process alive: fail fast
                raise ServerStartError(
                    f"Showdown could not listen on {self.config_overrides.get('bindaddress', HOST)}"
                    f":{self._port}; log {self.log_path}:\n{_tail(self.log_path)}"
                )
            time.sleep(0.05)
        raise ServerStartError(
            f"Showdown did not accept connections on port {self._port} within "
            f"{self.start_timeout:.0f} s; log {self.log_path}:\n{_tail(self.log_path)}"
        )

    def warm_up(self) -> None:
        """Log in once over a websocket (as a guest name) and disconnect.

        The first connection and login do lazy set-up work in the server (seconds
        under load); doing it here keeps that out of the first env reset.
        """
        url = f"ws://{self.url}/showdown/websocket"
        name = f"maplewarmup{self.port}"
        deadline = time.monotonic() + self.start_timeout
        started = time.monotonic()
        try:
            with ws_connect(url, open_timeout=self.start_timeout, proxy=None) as ws:
                while True:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise TimeoutError("no login confirmation received")
                    message = str(ws.recv(timeout=remaining))
                    if "|challstr|" in message:
                        ws.send(f"|/trn {name},0,")
                    elif f"|updateuser| {name}|" in message:
                        break
        except (OSError, TimeoutError, WebSocketException) as exc:
            raise ServerStartError(
                f"Showdown on {self.url} accepted TCP but not a websocket login within "
                f"{self.start_timeout:.0f} s ({exc!r}); log {self.log_path}:\n"
                f"{_tail(self.log_path) if self.log_path else ''}"
            ) from exc
        logger.info("Showdown on %s warmed up in %.1f s", self.url, time.monotonic() - started)

    def responsive(self, timeout: float) -> bool:
        """Whether the server greets a new websocket client (``|challstr|``) within
        ``timeout`` s. A hung or stopped (SIGSTOP) server still accepts TCP connections (the
        kernel does) but answers nothing, so the process being alive is not enough."""
        deadline = time.monotonic() + timeout
        try:
            with ws_connect(
                f"ws://{self.url}/showdown/websocket",
                open_timeout=timeout,
                close_timeout=1.0,
                proxy=None,
            ) as ws:
                while (remaining := deadline - time.monotonic()) > 0:
                    if "|challstr|" in str(ws.recv(timeout=remaining)):
                        return True
        except (OSError, TimeoutError, WebSocketException):
            pass
        return False

    def kill(self) -> None:
        """SIGKILL the server's process group now (a hung server may ignore SIGTERM); the
        process counts as dead, so :meth:`ensure_running` restarts it."""
        with self._lock:
            if self._process is not None:
                kill(self._process, group=True)

    def _terminate(self, timeout: float = 5.0) -> None:
        process, self._process = self._process, None
        if process is not None:
            terminate(process, timeout, group=True)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def stop(self) -> None:
        """Terminate the server's process group (SIGTERM, then SIGKILL); idempotent."""
        with self._lock:
            if self._process is not None:
                logger.info("stopping Showdown on %s", self.url)
            self._terminate()
            forget_at_exit(self)
            if self._owns_dir and self._server_dir is not None:
                shutil.rmtree(self._server_dir, ignore_errors=True)
                self._server_dir = None
                self._owns_dir = False
            elif self._server_dir is not None and self._process is None:
                # keep config and logs in a run directory, drop the package links
                for name in (*LINKED_ENTRIES, "node_modules"):
                    link = self._server_dir / name
                    if link.is_symlink():
                        link.unlink()

    def restart(self) -> ShowdownServer:
        """Stop and start again on the same port."""
        with self._lock:
            self._terminate()
            self.restarts += 1
            return self.start()

    def ensure_running(self) -> bool:
        """Restart the server if its process died; returns True if it was restarted."""
        with self._lock:
            if self.is_alive():
                return False
            if self._port is not None:
                logger.warning("Showdown on port %d is not running; restarting it", self._port)
                self.restart()
            else:
                self.start()
            return True

    def __enter__(self) -> ShowdownServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.is_alive() else "stopped"
        return f"ShowdownServer(port={self._port}, {state})"
