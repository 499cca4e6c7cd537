"""Finding Node.js and the pinned ``pokemon-showdown`` npm package; server addresses."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import psutil
from poke_env.ps_client.server_configuration import ServerConfiguration

HOST = "127.0.0.1"
AUTH_URL = "https://play.pokemonshowdown.com/action.php?"
MIN_NODE_MAJOR = 18
SETUP_HINT = "run `maple-setup-sim` (in a checkout: `make setup`, bash scripts/setup.sh)"
REPO_ROOT = Path(__file__).resolve().parents[2]
SIM_SUBDIR = "showdown"  # <data dir>/showdown/node_modules/pokemon-showdown (maple-setup-sim)


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
    message = (
        "Node.js 18+ not found on PATH; install Node, then run `maple-setup-sim` "
        "(in a checkout: `make setup`)"
    )
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


def data_dir() -> Path:
    """Maple's per-user data folder: ``$MAPLE_DATA_DIR``, else ``$XDG_DATA_HOME/maple``, else
    ``~/.local/share/maple``; ``maple-setup-sim`` installs the simulator under it."""
    override = os.environ.get("MAPLE_DATA_DIR")
    if override:
        return Path(override).expanduser().resolve()
    xdg = os.environ.get("XDG_DATA_HOME")
    return (Path(xdg) if xdg else Path.home() / ".local" / "share").expanduser() / "maple"


def user_showdown_dir() -> Path:
    """Where ``maple-setup-sim`` installs the npm package (it may not be there yet)."""
    return data_dir() / SIM_SUBDIR / "node_modules" / "pokemon-showdown"


def find_showdown() -> Path:
    """Locate the ``pokemon-showdown`` npm package.

    ``MAPLE_SHOWDOWN_DIR`` (the package directory) wins; otherwise
    ``node_modules/pokemon-showdown`` is searched in the repository root (relative to
    this package: a checkout), in the current directory and its parents, and last in
    the user's data folder, where ``maple-setup-sim`` installs it (:func:`data_dir`).
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
    roots = [REPO_ROOT]
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
    user = user_showdown_dir()
    if _is_showdown_package(user):
        return user
    raise ShowdownNotInstalledError(
        f"pokemon-showdown npm package not found (looked for node_modules/pokemon-showdown "
        f"in {roots[0]}, in {cwd} and its parents, and in {user.parent.parent}); {SETUP_HINT}, "
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


def port_holder(port: int) -> str:
    """`` (pid N, name)`` of the process listening on ``port``, or ``""`` if unknown
    (for error messages: which program took a server's port)."""
    try:
        for conn in psutil.net_connections("tcp"):
            if conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN:
                if conn.pid is None:
                    return ""
                return f" (by pid {conn.pid}, {psutil.Process(conn.pid).name()})"
    except (psutil.Error, OSError):
        pass
    return ""


def listens_on(pid: int, port: int) -> bool:
    """Whether process ``pid`` or one of its children listens on TCP ``port``: a server is
    ready when it is its own socket that accepts there, not another program's."""
    try:
        root = psutil.Process(pid)
        for process in (root, *root.children(recursive=True)):
            for conn in process.net_connections("tcp"):
                if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
                    return True
    except psutil.Error:
        pass
    return False


def configuration(host: str, port: int, secure: bool = False) -> ServerConfiguration:
    scheme = "wss" if secure else "ws"
    return ServerConfiguration(f"{scheme}://{host}:{port}/showdown/websocket", AUTH_URL)


def external_server(url: str) -> ServerConfiguration:
    """poke-env configuration for an external server: ``host:port`` or a ws(s):// URL.
    A bad scheme, a missing host or a port outside 1..65535 is a one-line ``ValueError``
    (before any connection is tried)."""
    url = url.strip()
    if "://" in url:
        parts = urlsplit(url)
        if parts.scheme not in ("ws", "wss"):
            raise ValueError(f"unsupported server URL {url!r}: use host:port or ws://, wss://")
        try:
            port = parts.port
        except ValueError:
            port = -1
        if not parts.hostname or port == -1 or port == 0:
            raise ValueError(
                f"bad server URL {url!r}: expected ws(s)://host[:port]/showdown/websocket "
                "with a port in 1..65535"
            )
        return ServerConfiguration(url, AUTH_URL)
    host, sep, port_text = url.rpartition(":")
    if not sep or not host or not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ValueError(
            f"bad server address {url!r}: expected host:port with a port in 1..65535 "
            "(e.g. 127.0.0.1:8000)"
        )
    return configuration(host, int(port_text))


# ---------------------------------------------------------------- server directory


def wait_for_server(configuration: ServerConfiguration, timeout: float) -> None:
    """Wait until the server's TCP port accepts connections (``ShowdownError`` if not)."""
    parts = urlsplit(configuration.websocket_url)
    host = parts.hostname or "127.0.0.1"
    port = parts.port or (443 if parts.scheme == "wss" else 80)
    deadline = time.monotonic() + timeout
    while not port_is_open(port, host):
        if time.monotonic() > deadline:
            raise ShowdownError(
                f"Showdown server {host}:{port} is unreachable (waited {timeout:.0f} s)"
            )
        time.sleep(0.2)
