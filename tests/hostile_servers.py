"""Hostile Showdown servers for tests (issue 61), all bound to 127.0.0.1 only, each loop
bounded so that it stops by itself: a relay that rewrites a real server's frames on their
way to the client, and scripted servers that greet like Showdown and then flood."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable

from websockets.asyncio.client import connect
from websockets.asyncio.server import serve

HOST = "127.0.0.1"
CHALLSTR = "|challstr|4|" + "ab" * 64


class LoopServer:
    """A websocket server on :data:`HOST` run by its own event loop thread; ``handler``
    serves each connection; ``close`` stops it."""

    def __init__(self, handler: Callable[..., Awaitable[None]], max_size: int | None = 1 << 20):
        self.port = 0
        self._handler, self._max_size = handler, max_size
        self._ready = threading.Event()
        self._stop: asyncio.Future | None = None
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._main(),))
        self.thread.start()
        assert self._ready.wait(30), "the test server did not start"

    async def _serve_one(self, websocket) -> None:
        with contextlib.suppress(Exception):  # the client went away
            await self._handler(websocket)

    async def _main(self) -> None:
        self._stop = self.loop.create_future()
        quiet = logging.getLogger("hostile_servers")  # a port probe's failed handshakes
        quiet.setLevel(logging.CRITICAL)
        async with serve(self._serve_one, HOST, 0, max_size=self._max_size, logger=quiet) as server:
            self.port = next(iter(server.sockets)).getsockname()[1]
            self._ready.set()
            await self._stop

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self._stop.set_result, None)
        self.thread.join(30)
        self.loop.close()


class Relay(LoopServer):
    """Forwards each client to a real server at ``upstream`` (a loopback port) and back;
    every frame from the server passes ``rewrite(frame) -> frame`` first. Stops with
    either side."""

    def __init__(self, upstream: int, rewrite: Callable[[str], str]):
        self.upstream, self.rewrite = upstream, rewrite
        self.rewritten = 0
        super().__init__(self._relay, max_size=None)

    async def _relay(self, client) -> None:
        url = f"ws://{HOST}:{self.upstream}/showdown/websocket"
        async with connect(url, max_size=None) as server:

            async def down() -> None:
                async for frame in server:
                    new = self.rewrite(frame)
                    self.rewritten += new != frame
                    await client.send(new)

            async def up() -> None:
                async for frame in client:
                    await server.send(frame)

            tasks = [asyncio.ensure_future(down()), asyncio.ensure_future(up())]
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in tasks:
                task.cancel()
