"""A Maple-started Showdown server refuses console and admin commands and frees ended battle
rooms."""

from __future__ import annotations

import asyncio
import time

import pytest
import websockets

# What the commands would print if any ran: letters outside hex, so that the server's random
# challenge string (hex) cannot contain it by chance, and not written in any command itself.
RAN = "zqzqzq"
JS = "'zq'.repeat(3)"


async def _session(url: str, commands: list[str], deadline_s: float = 30.0) -> list[str]:
    """Log in as a guest-named user, send ``commands``, return every message until each
    command was answered (or the deadline)."""
    received: list[str] = []
    async with websockets.connect(url) as ws:
        deadline = time.monotonic() + deadline_s

        async def read_until(predicate) -> None:
            while time.monotonic() < deadline:
                try:
                    message = await asyncio.wait_for(ws.recv(), deadline - time.monotonic())
                except TimeoutError:
                    return
                received.append(message)
                if predicate(message):
                    return

        await read_until(lambda m: "|challstr|" in m)
        await ws.send("|/trn Intruder,0,")  # noguestsecurity: any free name, no password
        await read_until(lambda m: "|updateuser|" in m and "Intruder" in m)
        for command in commands:
            answered = len(received)
            await ws.send(f"|{command}")
            await read_until(lambda m, n=answered: len(received) > n and "|" in m)
        await ws.send("|/cmd rooms")  # a harmless last command: everything before it ran
        await read_until(lambda m: "|queryresponse|rooms|" in m)
    return received


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_console_and_admin_commands_are_refused(showdown_server) -> None:
    commands = [
        f"/eval {JS}",
        f">> {JS}",
        f">>> {JS}",
        f"/evalbattle {JS}",
        "/hotpatch chat",
        "/bash echo zqzq''zq",
        "/declare pwned",
        "/lockdown",
    ]
    url = showdown_server.server_configuration.websocket_url
    replies = asyncio.run(_session(url, commands))
    text = "\n".join(m for m in replies if "|challstr|" not in m)  # random hex, no output
    assert "|queryresponse|rooms|" in text, text[-2000:]  # the session really ran
    for command in ("/eval", "/hotpatch", "/bash"):
        assert f"/error {command} - Requires console access" in text, text[-2000:]
    assert "/error /lockdown - Access denied" in text, text[-2000:]
    assert RAN not in text
    assert "pwned" not in text.replace("/declare pwned", "")
    assert "lockdown" not in text.lower().replace("/lockdown", "")
    assert showdown_server.is_alive()


async def _room_gone(url: str, room: str, deadline_s: float) -> tuple[bool, str]:
    """Poll ``/cmd roominfo`` (no join) until the server says the room does not exist."""
    last = ""
    async with websockets.connect(url) as ws:
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            await ws.send(f"|/cmd roominfo {room}")
            while time.monotonic() < deadline:
                try:
                    message = await asyncio.wait_for(ws.recv(), deadline - time.monotonic())
                except TimeoutError:
                    break
                if "|queryresponse|roominfo|" in message:
                    last = message
                    break
            if '"error":"not found' in last:
                return True, last
            await asyncio.sleep(0.2)  # the players' /leave is on its way
    return False, last


@pytest.mark.integration
@pytest.mark.timeout(180)
def test_an_ended_battle_room_is_freed_once_its_players_left(showdown_server) -> None:
    """Showdown keeps an empty ended battle room for 10 minutes; a Maple server frees it
    as soon as both players left (a training server otherwise grew ~200 MB/min)."""
    import numpy as np

    from mapleenv.env import PokemonEnv

    env = PokemonEnv(server=showdown_server, backend="server", opponent="random")
    try:
        obs, info = env.reset(seed=0)
        done = False
        while not done:
            action = int(np.flatnonzero(obs["action_mask"])[0])
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        url = showdown_server.server_configuration.websocket_url
        gone, last = asyncio.run(_room_gone(url, info["battle_tag"], deadline_s=60))
        assert gone, last
    finally:
        env.close()
