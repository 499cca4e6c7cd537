"""What a poke-env player keeps of what a server sends (docs/security.md, "Servers you
connect to"): a server chooses every message, and poke-env keeps each line a battle parses
(``battle._replay_data``: chat included), queues every challenge it is told of, and prints
its warnings raw. :class:`BoundedMessages` (a mixin for poke-env ``Player`` classes) drops
chat, caps the lines and bytes kept per battle, the battles and the queued challenges;
:class:`ServerTextFilter` makes the player's log records one bounded line each."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from mapleenv.paths import escape_control, printable

logger = logging.getLogger(__name__)  # Maple's lines (the player's logger prints server text)

MAX_BATTLE_LINES = 50_000  # protocol lines kept per battle (an honest 1,000-turn one: ~15k)
MAX_BATTLE_BYTES = 8 << 20  # their text (an honest 1,000-turn battle: ~0.6 MB)
MAX_BATTLES = 1000  # battles a player tracks at once (poke-env keeps finished ones too)
MAX_QUEUED_CHALLENGES = 16  # challenges waiting to be accepted (each name once)
# chat and room markup: nothing a battle's state, its replay or its quality counts read
CHAT = frozenset(
    {
        "c",
        "c:",
        "chat",
        "raw",
        "html",
        "uhtml",
        "uhtmlchange",
        "j",
        "J",
        "join",
        "l",
        "L",
        "leave",
        "n",
        "N",
        "name",
        "badge",
        "hidelines",
        "notify",
        "tempnotify",
        "tempnotifyoff",
        "debug",
    }
)
# past a battle's cap only what playing it on needs passes: its requests and its end
ESSENTIAL = frozenset({"request", "turn", "win", "tie", "error"})


class BoundedQueue(asyncio.Queue):
    """An ``asyncio.Queue`` that drops a ``put`` when full or when the item is queued
    already (never blocks the message handler that puts)."""

    def __init__(self, maxsize: int = MAX_QUEUED_CHALLENGES) -> None:
        super().__init__()
        self.cap, self.dropped = maxsize, 0

    def put_nowait(self, item: Any) -> None:
        if self.qsize() >= self.cap or item in self._queue:  # type: ignore[attr-defined]
            self.dropped += 1
            return
        super().put_nowait(item)

    async def put(self, item: Any) -> None:
        self.put_nowait(item)


class ServerTextFilter(logging.Filter):
    """A player's log records, whose text may be a server's: control characters (line
    breaks, escapes) escaped, the message cut to ``max_chars``, and at most ``burst``
    records a minute (the rest counted, said with the next that passes)."""

    def __init__(self, max_chars: int = 2000, burst: int = 20) -> None:
        super().__init__()
        self.max_chars, self.burst = max_chars, burst
        self._window, self._passed, self.dropped = time.monotonic(), 0, 0

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "maple_server_text", False):  # judged once for all handlers
            return True
        now = time.monotonic()
        if now - self._window > 60.0:
            self._window, self._passed = now, 0
        if self._passed >= self.burst:
            self.dropped += 1
            return False
        self._passed += 1
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return True
        if self.dropped:
            message = f"({self.dropped} more records dropped) {message}"
            self.dropped = 0
        record.msg, record.args = printable(message, max_len=self.max_chars), None
        if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
            text = logging.Formatter().formatException(record.exc_info)[:20_000]
            record.exc_text = "    " + escape_control(text, keep_newlines=True).replace(
                "\n", "\n    "
            )
        record.maple_server_text = True
        return True


class BoundedMessages:
    """Mix into a poke-env ``Player`` (before it in the bases) and call
    :meth:`bound_messages` at the end of ``__init__``: chat lines are dropped before
    poke-env sees them; past :data:`MAX_BATTLE_LINES` lines or :data:`MAX_BATTLE_BYTES`
    bytes kept in a battle only its requests and its end pass (one warning); a battle
    past ``max_battles`` is not tracked; challenges queue at most
    :data:`MAX_QUEUED_CHALLENGES`, each name once; the player's log is filtered
    (:class:`ServerTextFilter`)."""

    max_battle_lines = MAX_BATTLE_LINES
    max_battle_bytes = MAX_BATTLE_BYTES
    max_battles = MAX_BATTLES

    def bound_messages(self, filter_log: bool = True) -> None:
        """Start bounding (``filter_log``: also filter the player's log handlers; off where
        the caller filters them itself, as ``trainer.play``'s flood guard does)."""
        self._kept: dict[str, list[Any]] = {}  # tag -> [lines, bytes, capped]
        self._untracked = 0
        player: Any = self
        player._challenge_queue = BoundedQueue()
        if filter_log:
            text_filter = ServerTextFilter()
            for handler in player.logger.handlers:
                handler.addFilter(text_filter)

    def _kept_lines(self, split_messages: list[list[str]]) -> list[list[str]] | None:
        """The messages poke-env may see (the room line first), or None for none."""
        player: Any = self
        tag = split_messages[0][0][1:] if split_messages[0] else ""
        battles = player._battles
        kept = self._kept.get(tag)
        if kept is None:
            if tag not in battles and len(battles) >= self.max_battles:
                self._untracked += 1
                if self._untracked == 1:
                    logger.warning(
                        "the server started more than %d battles; the others are ignored",
                        self.max_battles,
                    )
                return None
            kept = self._kept[tag] = [0, 0, False]
            while len(self._kept) > 2 * self.max_battles:  # the oldest battles' counts
                del self._kept[next(iter(self._kept))]
        out = [split_messages[0]]
        for message in split_messages[1:]:
            kind = message[1] if len(message) > 1 else None
            if kind in CHAT or (kept[2] and kind not in ESSENTIAL):
                continue
            kept[0] += 1
            kept[1] += sum(map(len, message)) + len(message)
            if not kept[2] and (kept[0] > self.max_battle_lines or kept[1] > self.max_battle_bytes):
                kept[2] = True
                logger.warning(
                    "battle %s: the server sent more than %d lines or %d MiB; from here only "
                    "its requests and its end are read",
                    printable(tag, max_len=100),
                    self.max_battle_lines,
                    self.max_battle_bytes >> 20,
                )
            out.append(message)
        return out if len(out) > 1 else None

    async def _handle_battle_message(self, split_messages: list[list[str]]) -> None:
        if not split_messages or split_messages[0][0].startswith(">game"):
            await super()._handle_battle_message(split_messages)  # type: ignore[misc]
            return
        messages = self._kept_lines(split_messages)
        if messages is not None:
            await super()._handle_battle_message(messages)  # type: ignore[misc]
