"""A :class:`ServerPool`: the K local Showdown servers of one run, with a watchdog that
restarts dead servers on their port and kills (then restarts) hung ones."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from poke_env.ps_client.server_configuration import ServerConfiguration

from mapleenv.showdown.package import ShowdownError
from mapleenv.showdown.process import Watchdog
from mapleenv.showdown.server import ShowdownServer

logger = logging.getLogger(__name__)


class ServerPool:
    """K servers for one run; env ``i`` uses server ``i % K``.

    :meth:`start_watchdog` runs a daemon thread that restarts dead servers on their
    port, so envs in other processes can reconnect to the same URL. It also pings each
    server (:meth:`ShowdownServer.responsive`) every ``health_interval`` s and kills one
    that leaves ``health_failures`` pings in a row unanswered for ``health_timeout`` s
    (hung, SIGSTOPped), which restarts it; ``health_timeout=None``: no pings.
    """

    def __init__(
        self,
        n: int,
        log_dir: str | Path | None = None,
        *,
        health_timeout: float | None = 5.0,
        health_failures: int = 2,
        health_interval: float = 5.0,
        **server_kwargs: Any,
    ):
        if n < 1:
            raise ValueError(f"a server pool needs at least one server, got n={n}")
        if health_failures < 1:
            raise ValueError(f"health_failures must be >= 1, got {health_failures}")
        self.servers = [ShowdownServer(log_dir=log_dir, **server_kwargs) for _ in range(n)]
        self.health_timeout = health_timeout
        self.health_failures = health_failures
        self.health_interval = health_interval
        self._failed_pings = [0] * n
        self._last_ping = [0.0] * n
        self._watchdog: Watchdog | None = None

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

    def _kill_if_hung(self, i: int) -> None:
        """Ping server ``i`` when due (every ``health_interval`` s, at once again after a
        failure); kill it after ``health_failures`` unanswered pings in a row."""
        server = self.servers[i]
        now = time.monotonic()
        if (
            self.health_timeout is None
            or not server.is_alive()
            or (self._failed_pings[i] == 0 and now - self._last_ping[i] < self.health_interval)
        ):
            return
        self._last_ping[i] = now
        if server.responsive(self.health_timeout):
            self._failed_pings[i] = 0
            return
        self._failed_pings[i] += 1
        logger.warning(
            "Showdown on %s (pid %s) did not answer a ping in %.0f s (%d/%d)",
            server.url,
            server.pid,
            self.health_timeout,
            self._failed_pings[i],
            self.health_failures,
        )
        if self._failed_pings[i] >= self.health_failures:
            logger.warning("Showdown on %s is hung; killing it to restart it", server.url)
            self._failed_pings[i] = 0
            server.kill()

    def start_watchdog(self, interval: float = 1.0) -> None:
        """Check the servers every ``interval`` s in a daemon thread: restart dead ones,
        kill (and so restart) hung ones."""
        if self._watchdog is None:
            self._watchdog = Watchdog(self._restart_dead, "maple-server-watchdog", interval)
        self._watchdog.start()

    @property
    def failure(self) -> str | None:
        """Why the watchdog gave up restarting a server (``None``: it has not)."""
        return self._watchdog.failure if self._watchdog is not None else None

    def _restart_dead(self) -> None:
        """Restart dead and hung servers; raises (after checking every server) if one could
        not be restarted, so the watchdog backs off and, in the end, gives up."""
        errors = []
        for i, server in enumerate(self.servers):
            if self._watchdog is None or self._watchdog.stopping:
                return
            try:
                self._kill_if_hung(i)
                if self._watchdog is None or self._watchdog.stopping:
                    return
                server.ensure_running()
            except ShowdownError as exc:
                errors.append(str(exc).splitlines()[0])
        if errors:
            raise ShowdownError("; ".join(errors))

    def stop(self) -> None:
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            watchdog.stop()
        for server in self.servers:
            server.stop()

    def __enter__(self) -> ServerPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
