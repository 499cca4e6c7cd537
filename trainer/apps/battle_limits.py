"""Battles of ``python -m trainer.play`` that must end: past ``max_turns`` or ``battle_s``
seconds a battle is forfeited, counted lost at once and left (a server that goes on sending
turns would never end it). A mixin of the listening player (:mod:`trainer.apps.live`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from mapleenv.paths import printable

log = logging.getLogger("trainer.play")


class BattleLimits:
    """Forfeits the battles past the limits :meth:`limit_battles` set; placed before the
    poke-env player in the bases, it sees each battle message first."""

    def limit_battles(self, max_turns: int, battle_s: float) -> None:
        self.max_turns, self.battle_s = max_turns, battle_s
        self._born: dict[str, float] = {}  # tag -> when its first message came
        self._given_up: set[str] = set()

    async def _handle_battle_message(self, split_messages: list[list[str]]) -> None:
        tag = split_messages[0][0][1:] if split_messages and split_messages[0] else ""
        if tag in self._given_up:
            return  # forfeited: its room's late messages change nothing
        self._born.setdefault(tag, time.monotonic())
        await super()._handle_battle_message(split_messages)  # type: ignore[misc]
        battle = self._battles.get(tag)  # type: ignore[attr-defined]
        if battle is not None and not battle.finished and battle.turn > self.max_turns:
            await self._give_up(battle, f"past turn {self.max_turns} (max_turns)")

    def overdue(self) -> None:
        """Forfeit (from any thread) the battles going on longer than ``battle_s``."""
        now = time.monotonic()
        for tag, battle in list(self._battles.items()):  # type: ignore[attr-defined]
            born = self._born.get(tag, now)
            if not battle.finished and tag not in self._given_up and now - born > self.battle_s:
                reason = f"still going after {self.battle_s / 60:g} min (battle_minutes)"
                asyncio.run_coroutine_threadsafe(
                    self._give_up(battle, reason),
                    self.ps_client.loop,  # type: ignore[attr-defined]
                )

    async def _give_up(self, battle: Any, reason: str) -> None:
        """Forfeit ``battle`` and count it lost here at once, then leave its room: one line."""
        from mapleenv.opponents import PolicyOpponent

        tag = battle.battle_tag
        if tag in self._given_up or battle.finished:
            return
        self._given_up.add(tag)
        log.warning("battle %s: forfeited, %s", printable(tag), reason)
        with contextlib.suppress(Exception):
            await self.ps_client.send_message("/forfeit", tag)  # type: ignore[attr-defined]
        winner = battle.opponent_username or "the opponent"
        # poke-env's own handling of the end (counts, callbacks, /leave), past the bounds
        await PolicyOpponent._handle_battle_message(self, [[f">{tag}"], ["", "win", winner]])  # type: ignore[arg-type]
