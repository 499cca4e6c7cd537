"""The lock of Debian crate packages that built the engine (``debian-crates.lock`` beside
this module): read, written, and turned into what ``apt-get download`` asks for."""

from __future__ import annotations

import re
from pathlib import Path

LOCK_PATH = Path(__file__).with_name("debian-crates.lock")
# Debian package names (policy 5.6.7) of crate sources; versions: no blanks, no '='
_LINE = re.compile(r"^(librust-[a-z0-9][a-z0-9+.-]*-dev)=([0-9A-Za-z.+~:-]+)$")


class LockError(ValueError):
    """A line of the lock file that is not ``librust-<crate>-dev=<version>``."""


def parse_lock(text: str, source: str = "debian-crates.lock") -> dict[str, str]:
    """``{package: version}`` from the lock's text (comments after ``#`` and blank lines
    skipped); one-line :class:`LockError` naming the line when it is not a pin."""
    pins: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = _LINE.match(line)
        if match is None:
            raise LockError(f"{source}:{number}: not `librust-<crate>-dev=<version>`: {line!r}")
        name, version = match.groups()
        if name in pins:
            raise LockError(f"{source}:{number}: {name} is pinned twice")
        pins[name] = version
    return pins


def read_lock(path: Path = LOCK_PATH) -> dict[str, str]:
    return parse_lock(path.read_text(), str(path))


def format_lock(pins: dict[str, str], header: str) -> str:
    """The lock's text: ``header`` as comments, then the pins sorted by package."""
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    lines += [f"{name}={version}" for name, version in sorted(pins.items())]
    return "\n".join(lines) + "\n"


def download_requests(
    pins: dict[str, str], available: dict[str, set[str]]
) -> tuple[list[str], list[str]]:
    """What to ask ``apt-get download`` for, and what moved: each pinned package at its pinned
    version where the archive has it (``available``: package -> versions), else at the
    archive's current version (named in the second list); packages gone from it are left out
    (cargo then names the crate it misses)."""
    requests, moved = [], []
    for name, version in sorted(pins.items()):
        versions = available.get(name)
        if not versions:
            moved.append(f"{name} (gone)")
        elif version in versions:
            requests.append(f"{name}={version}")
        else:
            requests.append(name)
            moved.append(f"{name} ({version} -> current)")
    return requests, moved
