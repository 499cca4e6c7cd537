"""Hostile Showdown servers for tests (issue 61), all bound to 127.0.0.1 only, each loop
bounded so that it stops by itself: a relay that rewrites a real server's frames on their
way to the client, and scripted servers that greet like Showdown and then flood."""

from __future__ import annotations

import asyncio
import contextlib
import json
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
    every frame from the server passes ``rewrite(frame)`` first (a frame, or a list of
    frames to send instead); a frame holding a request waits ``delay_s`` first (a server
    that sends its turns slowly). Stops with either side."""

    def __init__(
        self, upstream: int, rewrite: Callable[[str], str | list[str]], delay_s: float = 0.0
    ):
        self.upstream, self.rewrite, self.delay_s = upstream, rewrite, delay_s
        self.rewritten = self.sent_bytes = 0
        super().__init__(self._relay, max_size=None)

    async def _relay(self, client) -> None:
        url = f"ws://{HOST}:{self.upstream}/showdown/websocket"
        async with connect(url, max_size=None) as server:

            async def down() -> None:
                async for frame in server:
                    if self.delay_s and "|request|" in frame:
                        await asyncio.sleep(self.delay_s)
                    new = self.rewrite(frame)
                    self.rewritten += new != frame
                    for each in [new] if isinstance(new, str) else new:
                        self.sent_bytes += len(each)
                        await client.send(each)

            async def up() -> None:
                async for frame in client:
                    await server.send(frame)

            tasks = [asyncio.ensure_future(down()), asyncio.ensure_future(up())]
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in tasks:
                task.cancel()


# ------------------------------------------------------------------ a scripted "Showdown"

TAG = "battle-gen9randombattle-1"
FOE = "rival"
MOVES = ["thunderbolt", "quickattack", "irontail", "voltswitch"]


def request(name: str, rqid: int) -> str:
    """A request of a one-Pokémon side (Pikachu), moves :data:`MOVES`."""
    body = {
        "active": [
            {
                "moves": [
                    {
                        "move": m,
                        "id": m,
                        "pp": 16,
                        "maxpp": 16,
                        "target": "normal",
                        "disabled": False,
                    }
                    for m in MOVES
                ]
            }
        ],
        "side": {
            "name": name,
            "id": "p1",
            "pokemon": [
                {
                    "ident": "p1: Pikachu",
                    "details": "Pikachu, L50",
                    "condition": "100/100",
                    "active": True,
                    "stats": {"atk": 100, "def": 100, "spa": 100, "spd": 100, "spe": 100},
                    "moves": MOVES,
                    "baseAbility": "static",
                    "item": "lightball",
                    "pokeball": "pokeball",
                    "ability": "static",
                    "teraType": "Electric",
                    "terastallized": "",
                }
            ],
        },
        "rqid": rqid,
    }
    return f">{TAG}\n|request|{json.dumps(body)}"


def battle_start(name: str) -> str:
    lines = [
        f">{TAG}",
        "|init|battle",
        f"|title|{name} vs. {FOE}",
        f"|player|p1|{name}|1|",
        f"|player|p2|{FOE}|1|",
        "|teamsize|p1|1",
        "|teamsize|p2|1",
        "|gametype|singles",
        "|gen|9",
        "|tier|[Gen 9] Random Battle",
        "|",
        "|start",
        "|switch|p1a: Pikachu|Pikachu, L50|100/100",
        "|switch|p2a: Eevee|Eevee, L50|100/100",
        "|turn|1",
    ]
    return "\n".join(lines)


def a_turn(turn: int) -> str:
    """A turn in which nothing faints: the battle could go on for ever."""
    return "\n".join(
        [
            f">{TAG}",
            "|",
            "|move|p1a: Pikachu|Thunderbolt|p2a: Eevee",
            "|-damage|p2a: Eevee|99/100",
            "|move|p2a: Eevee|Recover|p2a: Eevee",
            "|-heal|p2a: Eevee|100/100",
            "|",
            "|upkeep",
            f"|turn|{turn}",
        ]
    )


class ScriptedShowdown(LoopServer):
    """Just enough of Showdown's protocol for ``trainer.play mode=accept``: the greeting,
    the login, then ``script(server, websocket, name)``; what the client sent is kept in
    ``received``. Every loop of a script is bounded: it stops by itself."""

    def __init__(self, script: Callable[..., Awaitable[None]]):
        self.script = script
        self.received: list[str] = []
        self.sent_bytes = 0
        super().__init__(self._serve)

    async def send(self, websocket, frame: str) -> None:
        self.sent_bytes += len(frame)
        await websocket.send(frame)

    async def next_message(self, websocket, containing: str, timeout: float = 60.0) -> str:
        """The client's next message holding ``containing`` (others are kept too)."""

        async def wait() -> str:
            async for message in websocket:
                self.received.append(message)
                if containing in message:
                    return message
            raise ConnectionError("the client left")

        return await asyncio.wait_for(wait(), timeout)

    async def _serve(self, websocket) -> None:
        await self.send(websocket, CHALLSTR)
        trn = await self.next_message(websocket, "/trn ")
        name = trn.split("/trn ", 1)[1].split(",", 1)[0]
        await self.send(websocket, f"|updateuser| {name}|1|1|{{}}")
        await self.script(self, websocket, name)
        with contextlib.suppress(asyncio.TimeoutError):  # let the client go first
            await asyncio.wait_for(websocket.wait_closed(), 30)

    async def offer_battle(self, websocket, name: str) -> None:
        """A challenge from :data:`FOE`, accepted, its battle started, the first request."""
        await self.send(
            websocket, f'|updatechallenges|{{"challengesFrom":{{"{FOE}":"gen9randombattle"}}}}'
        )
        await self.next_message(websocket, f"/accept {FOE}")
        await self.send(websocket, battle_start(name))
        await self.send(websocket, request(name, 1))
