"""Names from outside (room ids, battle tags, player and team names) made safe to use in
file names and log lines: a hostile server chooses them (docs/security.md)."""

from __future__ import annotations

import hashlib
import os
import re
import stat
import tempfile
from pathlib import Path

MAX_NAME = 100  # characters of a sanitized file name, before the hash suffix
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def safe_filename(name: str, *, max_len: int = MAX_NAME) -> str:
    """``name`` as one path component that cannot leave its folder or hide itself.

    Letters, digits, ``.``, ``_`` and ``-`` are kept; any other run of characters (``/``,
    ``\\``, NUL, spaces, non-ASCII...) becomes ``_``, leading dots become ``_`` (no ``..``,
    no hidden file), and the result is cut to ``max_len``. A name that had to change gets
    ``-<8 hex digits of its SHA-256>`` appended, so two different hostile names do not
    land on the same file. Ordinary battle tags (``battle-gen9randombattle-42``) are
    returned as they are."""
    text = str(name)
    safe = _UNSAFE.sub("_", text)
    stripped = safe.lstrip(".")
    safe = "_" * (len(safe) - len(stripped)) + stripped
    safe = safe[:max_len]
    if safe != text or not safe:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        safe = f"{safe or '_'}-{digest}"
    return safe


def printable(text: object, *, max_len: int = 200) -> str:
    """``text`` for one log line: control characters (newlines, escapes) written as
    ``\\xNN``/``\\uNNNN`` so a name cannot forge or recolour log lines, and cut to
    ``max_len`` characters (only the head of a long text is escaped: cheap for any size)."""
    raw = str(text)
    value = escape_control(raw[: max_len + 1])
    if len(raw) > max_len or len(value) > max_len:
        value = f"{value[:max_len]}... ({len(raw)} characters)"
    return value


def escape_control(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control or line-breaking character written as ``\\xNN`` /
    ``\\uNNNN`` (``keep_newlines``: ``\\n`` stays a line break)."""

    def escape(match: re.Match[str]) -> str:
        char = match.group()
        return char if keep_newlines and char == "\n" else char.encode("unicode_escape").decode()

    return _CONTROL.sub(escape, text)


def check_writable(path: str | Path, *, key: str = "output") -> Path:
    """``path`` as an absolute path, if a results file can be written there: not an
    existing directory or special file (``/proc/self/mem``, a FIFO, a device), in a
    folder that exists (or can be made) where a file can be created now. Else a
    ``ValueError`` naming ``key``: said before any work, not after it."""
    target = Path(path).expanduser().absolute()
    try:
        info = target.stat() if target.exists() else None
    except OSError as exc:
        raise ValueError(f"{key}: cannot use {target}: {exc.strerror or exc}") from None
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{key}: {target} is {_kind(info.st_mode)}, not a file to write")
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # the first existing folder: the rest is made at the end
    try:
        if folder == target.parent:  # a file can be created there now (not in /proc...)
            fd, probe = tempfile.mkstemp(prefix=f".{target.name[:50]}.", dir=folder)
            os.close(fd)
            os.unlink(probe)
        elif not (folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)):
            raise PermissionError(13, "Permission denied")
    except OSError as exc:
        raise ValueError(f"{key}: cannot write in {folder}: {exc.strerror or exc}") from None
    return target


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def size_text(size: int) -> str:
    """``1.5 MiB`` or ``512 bytes``."""
    return f"{size / (1 << 20):.1f} MiB" if size >= 1 << 20 else f"{size} bytes"


def read_small_file(path: str | Path, *, key: str, limit: int, what: str) -> str:
    """The UTF-8 text of ``path``, read only if it is a regular file of at most ``limit``
    bytes: a FIFO, a device (``/dev/zero``), a socket, a directory or a larger file is a
    ``ValueError`` naming ``key`` (the setting), the file and its kind or size, at once.
    The file is opened without blocking (a FIFO with no writer cannot hang the open),
    checked on the open descriptor (no swap between check and read) and read no further
    than the cap. ``what`` names the file's job in messages (``a team file``)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ValueError(f"{key}: cannot read {path}: {exc.strerror or exc}") from exc
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{key}: {path} is {_kind(info.st_mode)}, not {what}")
        if info.st_size > limit:
            raise ValueError(
                f"{key}: {path} is {size_text(info.st_size)}; {what} may have at most "
                f"{size_text(limit)}"
            )
        data = handle.read(limit + 1)
    if len(data) > limit:  # it grew since the check
        raise ValueError(f"{key}: {path} is over {size_text(limit)}, the most {what} may have")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{key}: cannot read {path}: not UTF-8 text ({exc.reason})") from exc
