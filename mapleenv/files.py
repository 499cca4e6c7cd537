"""Folders Maple writes into but may not own (a run folder someone sent you, a resumed run):
a check that refuses one holding links or special files before anything is written, and
writes that never follow a link (docs/security.md, "Run folders")."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import IO

MAX_ENTRIES = 200_000  # entries of a folder checked before Maple writes there
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class UnsafeFolder(ValueError):
    """A folder Maple would write into holds a link or a special file (one line)."""


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file or folder"


def _entries(folder: Path) -> Iterator[os.DirEntry[str]]:
    with os.scandir(folder) as entries:
        yield from entries


def check_output_folder(
    folder: str | Path, *, key: str, links_allowed: Collection[str] = ()
) -> None:
    """Refuse ``folder`` (if it exists) when anything in it, at any depth, is a symbolic
    link, a FIFO, a device or a socket: Maple writes and appends there, and a link would
    make it write outside the folder. ``links_allowed``: names of links Maple itself makes
    (and re-points) where they are met. The folder itself may be a link to a folder you
    named. One :class:`UnsafeFolder` line naming ``key``, the entry and what it is; at most
    :data:`MAX_ENTRIES` entries are looked at, more is refused too."""
    root = Path(folder)
    try:
        info = root.stat()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UnsafeFolder(f"{key}: cannot use {root}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeFolder(f"{key}: {root} is {_kind(info.st_mode)}, not a folder")
    seen, todo = 0, [root]
    while todo:
        current = todo.pop()
        try:
            for entry in _entries(current):
                seen += 1
                if seen > MAX_ENTRIES:
                    raise UnsafeFolder(
                        f"{key}: {root} holds more than {MAX_ENTRIES} entries; Maple checks "
                        "each before it writes there: use a new folder"
                    )
                mode = entry.stat(follow_symlinks=False).st_mode
                if stat.S_ISDIR(mode):
                    todo.append(Path(entry.path))
                elif stat.S_ISLNK(mode) and entry.name in links_allowed:
                    continue
                elif not stat.S_ISREG(mode):
                    target = f" (to {os.readlink(entry.path)!r:.200})" if stat.S_ISLNK(mode) else ""
                    raise UnsafeFolder(
                        f"{key}: {entry.path} is {_kind(mode)}{target}; Maple writes in "
                        f"{root} and will not write through links or into special files: "
                        "remove it, or use a new folder"
                    )
        except OSError as exc:
            raise UnsafeFolder(f"{key}: cannot read {current}: {exc.strerror or exc}") from None


def write_atomic(path: str | Path, data: str | bytes, *, encoding: str = "utf-8") -> Path:
    """Write ``data`` to ``path`` as a new file: a temp file in the same folder (made with
    ``O_EXCL``: never a link's target), then ``os.replace``, which replaces a link at
    ``path`` rather than writing through it. A reader sees the old file or the new one."""
    path = Path(path)
    raw = data.encode(encoding) if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:80]}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def open_append(path: str | Path, *, newline: str | None = None) -> IO[str]:
    """``path`` opened to append text, created if missing, refused (``OSError``) if it is a
    link (``O_NOFOLLOW``) or not a regular file: an append never lands outside the folder."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW, 0o644)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file")
    return os.fdopen(fd, "a", newline=newline, encoding="utf-8")


def open_read(path: str | Path, *, newline: str | None = None) -> IO[str]:
    """``path`` opened to read text, refused (``OSError``) if it is a link or not a
    regular file (a FIFO would block the read)."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file")
    return os.fdopen(fd, "r", newline=newline, encoding="utf-8")
