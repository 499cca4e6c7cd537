"""Managed local `pokemon-showdown` servers.

A :class:`ShowdownServer` runs the npm package's prebuilt server
(``node pokemon-showdown start --no-security --skip-build PORT``) in its own process
group, bound to 127.0.0.1, with a config written by Maple.

The package resolves ``config/config.js``, ``logs/`` and friends relative to its own
root (``dist/lib/fs.js`` derives ``ROOT_PATH`` from ``__dirname``), not the CWD. To
give every server its own config and logs without touching ``node_modules``, each
server gets a *server directory*: symlinks to the package's read-only parts
(``dist``, ``data``, ``server``, ...) plus a real ``config/`` and ``logs/``. Node runs
with ``--preserve-symlinks --preserve-symlinks-main`` so that ``__dirname`` (and hence
the package root) is the server directory.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from poke_env.ps_client.server_configuration import ServerConfiguration
from websockets.exceptions import WebSocketException
from websockets.sync.client import connect as ws_connect

logger = logging.getLogger(__name__)

HOST = "127.0.0.1"
AUTH_URL = "https://play.pokemonshowdown.com/action.php?"
MIN_NODE_MAJOR = 18
SETUP_HINT = "run `make setup` (bash scripts/setup.sh)"

# Package entries linked into every server directory (read-only parts of the package).
_LINKED_ENTRIES = ("dist", "data", "server", "translations", "databases", "package.json",
                   "pokemon-showdown")

# Config overrides on top of the package's config-example.js. Everything that
# throttles, punishes, locks down, logs or phones home is switched off.
DEFAULT_CONFIG: dict[str, Any] = {
    "bindaddress": HOST,
    "subprocesses": 0,  # battles simulated in the server process (see module docs)
    "nothrottle": True,
    "noipchecks": True,
    "noguestsecurity": True,
    "punishmentautolock": False,
    "autolockdown": False,
    "crashguard": True,
    "logchat": False,
    "logchallenges": False,
    "loguserstats": 0,
    "reportjoins": False,
    "reportbattles": False,
    "reportbattlejoins": False,
    "repl": False,
    "watchconfig": False,
    "backdoor": False,
    "nofswriting": True,
    "noNetRequests": True,
    "forcetimer": False,
    "serverid": "maple",
}


class ShowdownError(RuntimeError):
    """Base class of Maple's Showdown server errors."""


class NodeNotFoundError(ShowdownError):
    """Node.js (18+) is missing or too old."""


class ShowdownNotInstalledError(ShowdownError):
    """The pokemon-showdown npm package cannot be found."""


class ServerStartError(ShowdownError):
    """A Showdown process did not come up (the message carries its log tail)."""


# --------------------------------------------------------------------------- lookup


def find_node() -> str:
    """Path of a Node.js 18+ executable on PATH, or :class:`NodeNotFoundError`."""
    node = shutil.which("node")
    message = "Node.js 18+ not found on PATH; install Node, then run `make setup`"
    if node is None:
        raise NodeNotFoundError(message)
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=10)
        major = int(out.stdout.strip().lstrip("v").split(".")[0])
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        raise NodeNotFoundError(f"{message} (`{node} --version` failed: {exc})") from exc
    if major < MIN_NODE_MAJOR:
        raise NodeNotFoundError(f"{message} (found {out.stdout.strip()} at {node})")
    return node


def _is_showdown_package(path: Path) -> bool:
    return (path / "pokemon-showdown").is_file() and (path / "dist" / "server").is_dir()


def find_showdown() -> Path:
    """Locate the ``pokemon-showdown`` npm package.

    ``MAPLE_SHOWDOWN_DIR`` (the package directory) wins; otherwise
    ``node_modules/pokemon-showdown`` is searched in the repository root (relative to
    this package) and in the current directory and its parents.
    """
    override = os.environ.get("MAPLE_SHOWDOWN_DIR")
    if override:
        path = Path(override).expanduser().resolve()
        if not _is_showdown_package(path):
            raise ShowdownNotInstalledError(
                f"MAPLE_SHOWDOWN_DIR={override} is not a pokemon-showdown package "
                f"(no `pokemon-showdown` script and `dist/server`); unset it or {SETUP_HINT}"
            )
        return path
    roots = [Path(__file__).resolve().parent.parent]
    cwd = Path.cwd().resolve()
    roots += [cwd, *cwd.parents]
    seen: set[Path] = set()
    for root in roots:
        if root in seen:
            continue
        seen.add(root)
        candidate = root / "node_modules" / "pokemon-showdown"
        if _is_showdown_package(candidate):
            return candidate
    raise ShowdownNotInstalledError(
        f"pokemon-showdown npm package not found (looked for node_modules/pokemon-showdown "
        f"in {roots[0]} and {cwd} and its parents); {SETUP_HINT}, "
        "or set MAPLE_SHOWDOWN_DIR to the package directory"
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def port_is_open(port: int, host: str = HOST, timeout: float = 0.5) -> bool:
    """Whether a TCP connect to ``host:port`` succeeds."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _configuration(host: str, port: int, secure: bool = False) -> ServerConfiguration:
    scheme = "wss" if secure else "ws"
    return ServerConfiguration(f"{scheme}://{host}:{port}/showdown/websocket", AUTH_URL)


def external_server(url: str) -> ServerConfiguration:
    """poke-env configuration for an external server: ``host:port`` or a ws(s):// URL."""
    url = url.strip()
    if url.startswith(("ws://", "wss://")):
        return ServerConfiguration(url, AUTH_URL)
    if "://" in url:
        raise ValueError(f"unsupported server URL {url!r}: use host:port or ws://, wss://")
    host, sep, port = url.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"bad server address {url!r}: expected host:port (e.g. 127.0.0.1:8000)")
    return _configuration(host, int(port))


# ---------------------------------------------------------------- server directory


def render_config(port: int, overrides: dict[str, Any] | None = None,
                  package: Path | None = None) -> str:
    """Text of the ``config/config.js`` Maple writes (config-example + overrides)."""
    package = package or find_showdown()
    values = {**DEFAULT_CONFIG, **(overrides or {}), "port": port}
    example = json.dumps(str(package / "config" / "config-example.js"))
    lines = [
        "'use strict';",
        "// Written by Maple (mapleenv/server.py): config-example.js plus Maple's overrides.",
        f"Object.assign(exports, require({example}));",
    ]
    lines += [f"exports.{key} = {json.dumps(value)};" for key, value in values.items()]
    if "startuphook" not in values:
        lines.append(_FORMAT_LIST_HOOK)
    return "\n".join(lines) + "\n"


# The server builds the |formats| list sent to every client on the first connection,
# computing each format's rule table (that loads every mod: ~5 s of CPU). Clients
# like poke-env ignore the list, so Maple builds it at startup from the format names
# and flags only (the "level 50" display flag is dropped).
_FORMAT_LIST_HOOK = """\
exports.startuphook = function () {
  let text = '|formats' + (Ladders.formatsListPrefix || '');
  let section = '', shown = '', column = 1;
  for (const format of Dex.formats.all()) {
    if (format.section) section = format.section;
    if (format.column) column = format.column;
    if (!format.name || !(format.challengeShow || format.searchShow || format.tournamentShow)) {
      continue;
    }
    if (section !== shown) { shown = section; text += `|,${column}|${section}`; }
    const flags = (format.team ? 1 : 0) | (format.searchShow ? 2 : 0) |
      (format.challengeShow ? 4 : 0) | (format.tournamentShow ? 8 : 0);
    text += `|${format.name},${flags.toString(16)}`;
  }
  Rooms.global.formatList = text;
};"""


def prepare_server_dir(directory: Path, port: int, package: Path | None = None,
                       overrides: dict[str, Any] | None = None) -> Path:
    """Create (or refresh) a server directory for ``port``; returns it."""
    package = package or find_showdown()
    directory.mkdir(parents=True, exist_ok=True)
    for name in _LINKED_ENTRIES:
        target = package / name
        link = directory / name
        if target.exists() and not link.is_symlink():
            link.symlink_to(target)
    # Dependencies (sockjs, ...) are hoisted next to the package by npm.
    modules = package / "node_modules"
    if not modules.is_dir() and package.parent.name == "node_modules":
        modules = package.parent
    if modules.is_dir() and not (directory / "node_modules").is_symlink():
        (directory / "node_modules").symlink_to(modules)
    (directory / "config" / "chat-plugins").mkdir(parents=True, exist_ok=True)
    (directory / "logs" / "repl").mkdir(parents=True, exist_ok=True)
    (directory / "config" / "config.js").write_text(render_config(port, overrides, package))
    return directory


# ------------------------------------------------------------------ process control

_PR_SET_PDEATHSIG = 1
_libc_prctl: Any = None
if sys.platform.startswith("linux"):
    with contextlib.suppress(OSError, AttributeError):
        _libc_prctl = ctypes.CDLL(None, use_errno=True).prctl


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if _libc_prctl is not None:
        _libc_prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


_LISTEN_ERROR = re.compile(r"CRASH: Error: listen E[A-Z]+")

_LIVE_SERVERS: weakref.WeakSet[ShowdownServer] = weakref.WeakSet()


@atexit.register
def _stop_all_servers() -> None:
    for server in list(_LIVE_SERVERS):
        with contextlib.suppress(Exception):
            server.stop()


def _tail(path: Path, lines: int = 30) -> str:
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

    def __init__(self, port: int | None = None, log_dir: str | Path | None = None, *,
                 start_timeout: float = 60.0, config: dict[str, Any] | None = None,
                 warm: bool = True):
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
        return _configuration(HOST, self.port)

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
            raise ServerStartError(f"port {self._port} on {HOST} is already in use")
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
        cmd = [node, "--preserve-symlinks", "--preserve-symlinks-main", "pokemon-showdown",
               "start", "--no-security", "--skip-build", str(self._port)]
        logger.info("starting Showdown on %s:%d (dir %s, log %s)", HOST, self._port,
                    self._server_dir, log_path)
        self._process = subprocess.Popen(
            cmd, cwd=self._server_dir, stdin=subprocess.DEVNULL, stdout=self._log_file,
            stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=_die_with_parent if _libc_prctl is not None else None,
        )
        _LIVE_SERVERS.add(self)

    def _wait_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise ServerStartError(
                    f"Showdown exited with code {self._process.returncode} while starting on "
                    f"port {self._port}; log {self.log_path}:\n{_tail(self.log_path)}")
            if port_is_open(self.port):
                logger.info("Showdown ready on %s (pid %d)", self.url, self._process.pid)
                return
            if self._listen_failed():  # crashguard keeps the process alive: fail fast
                raise ServerStartError(
                    f"Showdown could not listen on {self.config_overrides.get('bindaddress', HOST)}"
                    f":{self._port}; log {self.log_path}:\n{_tail(self.log_path)}")
            time.sleep(0.05)
        raise ServerStartError(
            f"Showdown did not accept connections on port {self._port} within "
            f"{self.start_timeout:.0f} s; log {self.log_path}:\n{_tail(self.log_path)}")

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
                f"{_tail(self.log_path) if self.log_path else ''}") from exc
        logger.info("Showdown on %s warmed up in %.1f s", self.url, time.monotonic() - started)

    def _terminate(self, timeout: float = 5.0) -> None:
        process, self._process = self._process, None
        if process is not None:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout)
            # Children of a crashed server may outlive it: sweep the group anyway.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def stop(self) -> None:
        """Terminate the server's process group (SIGTERM, then SIGKILL); idempotent."""
        with self._lock:
            if self._process is not None:
                logger.info("stopping Showdown on %s", self.url)
            self._terminate()
            _LIVE_SERVERS.discard(self)
            if self._owns_dir and self._server_dir is not None:
                shutil.rmtree(self._server_dir, ignore_errors=True)
                self._server_dir = None
                self._owns_dir = False
            elif self._server_dir is not None and self._process is None:
                # keep config and logs in a run directory, drop the package links
                for name in (*_LINKED_ENTRIES, "node_modules"):
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


class ServerPool:
    """K servers for one run; env ``i`` uses server ``i % K``.

    :meth:`start_watchdog` runs a daemon thread that restarts dead servers on their
    port, so envs in other processes can reconnect to the same URL.
    """

    def __init__(self, n: int, log_dir: str | Path | None = None, **server_kwargs: Any):
        if n < 1:
            raise ValueError(f"a server pool needs at least one server, got n={n}")
        self.servers = [ShowdownServer(log_dir=log_dir, **server_kwargs) for _ in range(n)]
        self._watchdog: threading.Thread | None = None
        self._stop_event = threading.Event()

    def __len__(self) -> int:
        return len(self.servers)

    def __iter__(self) -> Iterator[ShowdownServer]:
        return iter(self.servers)

    def configuration_for(self, i: int) -> ServerConfiguration:
        return self.servers[i % len(self.servers)].server_configuration

    def start(self) -> ServerPool:
        """Start all servers (launched together, then awaited)."""
        try:
            for server in self.servers:
                server.start(wait=False)
            for server in self.servers:
                server.wait_until_ready(warm_up=False)
            # Warm-ups are network waits: overlap them (no process is started here).
            warm = [server for server in self.servers if server.warm]
            if warm:
                with ThreadPoolExecutor(len(warm), thread_name_prefix="maple-warmup") as ex:
                    list(ex.map(ShowdownServer.warm_up, warm))
        except BaseException:
            self.stop()
            raise
        return self

    def ensure_running(self) -> int:
        """Restart dead servers; returns how many were restarted."""
        return sum(server.ensure_running() for server in self.servers)

    def start_watchdog(self, interval: float = 1.0) -> None:
        """Check the servers every ``interval`` s in a daemon thread; restart dead ones."""
        if self._watchdog is not None and self._watchdog.is_alive():
            return
        self._stop_event.clear()

        def watch() -> None:
            while not self._stop_event.wait(interval):
                for server in self.servers:
                    if self._stop_event.is_set():
                        return
                    try:
                        server.ensure_running()
                    except ShowdownError:
                        logger.exception("watchdog could not restart %r", server)

        self._watchdog = threading.Thread(target=watch, name="maple-server-watchdog",
                                          daemon=True)
        self._watchdog.start()

    def stop(self) -> None:
        self._stop_event.set()
        if self._watchdog is not None:
            self._watchdog.join(timeout=10)
            self._watchdog = None
        for server in self.servers:
            server.stop()

    def __enter__(self) -> ServerPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
