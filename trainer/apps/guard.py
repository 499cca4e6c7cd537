"""What ``trainer.play`` does with what a server sends it: the watch that turns a refusal,
a taken name, a failed login or a flood of messages that cannot be handled into one
error line, and the log filter that keeps a flooding server from filling the disk
(identical messages counted and summarised, long ones cut). docs/security.md."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Iterable

from mapleenv.paths import escape_control, printable

# Popups with which Showdown refuses a challenge or a ladder search (server/chat-commands,
# server/ladders): the request is gone, so waiting for its battle would wait forever.
REFUSALS = (
    "was not found",
    "is not accepting challenges",
    "can't battle yourself",
    "must choose a username",
    "is not ladderable",
    "format is invalid",
    "barred from starting",
    "banned from battling",
    "requires you to be rank",
    "already challenging someone",
)
MAX_HANDLER_ERRORS = 100  # messages poke-env failed to handle: past this the server is dropped
MAX_TRACEBACK = 10_000  # characters of a traceback's head and of its tail kept in the log
_HANDLER_ERROR = "Unhandled exception raised while handling message"
# ``extra={OWN_LINE: True}``: Maple's own summary of a battle it asked for (at most one per
# battle of ``battles``), which the flood guard passes uncounted; a server's text never has it
OWN_LINE = "maple_own_line"
_NUMBERS = re.compile(r"\d+")


def _indented(text: str) -> str:
    """``text`` with control characters escaped but its line breaks, each following
    line indented: it cannot start a line that reads like a log record."""
    return "    " + escape_control(text, keep_newlines=True).replace("\n", "\n    ")


class RefusalWatch(logging.Handler):
    """Watches the records poke-env logs for a player: ``refusal`` is the first refusal
    popup (``Popup message received: |popup|...``); ``fatal`` the first reason to stop at
    once: the name taken or refused (``|nametaken|``), a login that failed (an error while
    handling ``|challstr|``), :data:`MAX_HANDLER_ERRORS` messages that could not be
    handled (a server sending garbage). ``ended`` is the error that ended the connection
    (refused, a frame over the size limit), for the line that says it."""

    def __init__(self, max_errors: int = MAX_HANDLER_ERRORS) -> None:
        super().__init__(logging.DEBUG)
        self.refusal: str | None = None
        self.fatal: str | None = None
        self.errors = 0
        self.max_errors = max_errors
        self.first_error: str | None = None
        self.ended: str | None = None  # the error that ended the connection, if one did
        self.explained: list[BaseException] = []  # errors the fatal line already says

    def _explain(self, record: logging.LogRecord) -> None:
        record.maple_explained = True
        if record.exc_info and record.exc_info[1] is not None:
            self.explained.append(record.exc_info[1])

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._watch(record)
        except Exception:  # a record that cannot be formatted: logging's own report
            self.handleError(record)

    def _watch(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if self.refusal is None and message.startswith("Popup message received"):
            text = message.split("|popup|", 1)[-1].replace("||", " ").strip()
            if any(refusal in text for refusal in REFUSALS):
                self.refusal = printable(text, max_len=300)
        elif message.startswith("Error message received: |nametaken|"):
            self._explain(record)
            _, _, name, reason = (message.split("|", 3) + ["", ""])[:4]
            if self.fatal is None:
                self.fatal = printable(
                    f"the server refused the name {name!r}: {reason}", max_len=300
                )
        elif message.startswith(_HANDLER_ERROR):
            self._handler_error(message.partition("\n")[2], record)
        elif record.exc_info and record.msg is record.exc_info[1]:
            # poke-env's listen() logging the error that ended the connection (refused, a
            # frame over the size limit...): the error line says it; the traceback, play.log
            self._explain(record)
            error = record.exc_info[1]
            if self.ended is None:
                self.ended = f"{type(error).__name__}: {printable(error, max_len=300)}"

    def _handler_error(self, received: str, record: logging.LogRecord) -> None:
        self.errors += 1
        if self.first_error is None:
            self.first_error = printable(received, max_len=120)
        if received.startswith(("|challstr|", "|nametaken|")):
            self._explain(record)  # the fatal line says it; the traceback stays in play.log
        if self.fatal is not None:
            return
        if received.startswith("|challstr|"):
            error = record.exc_info[1] if record.exc_info else None
            detail = f": {type(error).__name__}: {printable(error, max_len=200)}" if error else ""
            self.fatal = f"login failed (wrong password or login server unreachable?){detail}"
        elif self.errors >= self.max_errors:
            self.fatal = (
                f"the server sent {self.errors} messages that could not be handled "
                f"(the first: {self.first_error}); not a Showdown server?"
            )


class QuietExplained(logging.Filter):
    """For the console: drops the records (and asyncio's "never retrieved" reports of
    their errors) whose cause the watch's one fatal line already gives."""

    def __init__(self, watch: RefusalWatch) -> None:
        super().__init__()
        self.watch = watch

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "maple_explained", False):
            return False
        error = record.exc_info[1] if record.exc_info else None
        return error is None or not any(error is known for known in self.watch.explained)


class FloodGuard(logging.Filter):
    """A log filter against floods: per kind of message (logger, level, format string,
    exception type) the first ``burst`` records of each ``window_s`` pass; the rest are
    counted and one line says how many were dropped when the kind shows up again after
    the window (or at :meth:`flush`). A message is cut to ``max_chars``. The same
    record seen by several handlers is judged once. Maple's own per-battle lines
    (:data:`OWN_LINE`) pass uncounted: a 200-battle run against a fast bot logs all 200."""

    def __init__(self, burst: int = 5, window_s: float = 60.0, max_chars: int = 2000) -> None:
        super().__init__()
        self.burst, self.window_s, self.max_chars = burst, window_s, max_chars
        self._kinds: dict[tuple, list] = {}  # kind -> [window start, passed, dropped]
        self._last: tuple[logging.LogRecord | None, bool] = (None, True)
        self._lock = threading.Lock()
        self.dropped = 0

    def filter(self, record: logging.LogRecord) -> bool:
        with self._lock:
            if self._last[0] is record:
                return self._last[1]
            verdict = getattr(record, OWN_LINE, False) is True or self._judge(record)
            self._last = (record, verdict)
        if verdict:
            self._cut(record)
        return verdict

    def _judge(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] else None
        # the first line, numbers as "#": asyncio's "Task exception was never retrieved"
        # names each task (Task-14963) in its message
        head = _NUMBERS.sub("#", str(record.msg).partition("\n")[0])[:200]
        kind = (record.name, record.levelno, head, error)
        now = time.monotonic()
        entry = self._kinds.setdefault(kind, [now, 0, 0])
        if now - entry[0] > self.window_s:
            if entry[2]:
                self._note(record, entry[2])
            entry[:] = [now, 0, 0]
        if entry[1] < self.burst:
            entry[1] += 1
            return True
        entry[2] += 1
        self.dropped += 1
        return False

    def _note(self, record: logging.LogRecord, dropped: int) -> None:
        record.msg = f"({dropped} more like the next were dropped in {self.window_s:.0f} s) " + (
            str(record.msg)
        )

    def _cut(self, record: logging.LogRecord) -> None:
        """The record made one safe line: its message's control characters (newlines,
        carriage returns, escapes: a server's text) escaped and the message cut to
        ``max_chars``; its traceback, where a server's text may sit in an error's message,
        escaped too and indented, so no line of it can read like a record of its own."""
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # bad arguments: the handler reports it
            return
        record.msg, record.args = printable(message, max_len=self.max_chars), None
        if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
            text = logging.Formatter().formatException(record.exc_info)
            if len(text) > 2 * MAX_TRACEBACK:
                text = f"{text[:MAX_TRACEBACK]}\n... (cut)\n{text[-MAX_TRACEBACK:]}"
            record.exc_text = _indented(text)
        if record.stack_info:
            record.stack_info = _indented(record.stack_info[: 2 * MAX_TRACEBACK])

    def pending(self) -> list[str]:
        """One line per kind with dropped records not yet reported (and forgets them)."""
        with self._lock:
            lines = [
                f"{entry[2]} more log records like {kind[2]!r} ({kind[0]}) were dropped"
                for kind, entry in self._kinds.items()
                if entry[2]
            ]
            for entry in self._kinds.values():
                entry[2] = 0
        return lines

    def install(
        self, loggers: Iterable[logging.Logger], console: logging.Filter | None = None
    ) -> None:
        """Filter every output handler (console, file: stream handlers) of
        ``loggers`` and of the root logger; watches (:class:`RefusalWatch`) see all.
        ``console`` is added to the handlers that are not files."""
        for logger in [logging.getLogger(), *loggers]:
            for handler in logger.handlers:
                if not isinstance(handler, logging.StreamHandler):
                    continue
                handler.addFilter(self)  # a filter is added once
                if console is not None and not isinstance(handler, logging.FileHandler):
                    handler.addFilter(console)

    def remove(self, console: logging.Filter | None = None) -> None:
        for logger in [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]:
            for handler in getattr(logger, "handlers", []):
                handler.removeFilter(self)
                if console is not None:
                    handler.removeFilter(console)
