"""The battle formats the pinned simulator knows, to stop a bad ``battle_format`` at start
(the simulator would otherwise fall back or fail deep in a battle).

Listing them takes a Node start (~0.3 s of CPU), so the list is kept in Maple's data folder
(``<data dir>/cache/``), keyed by the simulator package's version and the contents of its
formats file: a command or test process reads it instead (every install of the pinned package
shares one file), and another or edited simulator lists anew.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path

from mapleenv.showdown.child import NodeChild
from mapleenv.showdown.package import ShowdownError, data_dir, find_node, find_showdown

_LIST_FORMATS = """
const {Dex} = require(process.argv[1]);
const out = {};
for (const f of Dex.formats.all()) {
    if (f.effectType === 'Format') out[f.id] = [!f.team, f.gameType || 'singles'];
}
process.stdout.write(JSON.stringify(out));
"""


GAME_TYPES = ("singles", "doubles")


def is_doubles_format(battle_format: str) -> bool:
    """Whether a format plays double battles, by poke-env's reading of its name (its players
    and ``Player`` make a ``DoubleBattle`` for the same names); :func:`check_format` checks
    it against the simulator's own game type."""
    name = battle_format.lower()
    return "vgc" in name or "double" in name or "metronome" in name


def game_type(battle_format: str) -> str:
    """``"doubles"`` or ``"singles"``: the game of a format Maple plays
    (:func:`is_doubles_format`)."""
    return "doubles" if is_doubles_format(battle_format) else "singles"


@functools.cache
def known_formats() -> dict[str, tuple[bool, str]]:
    """Every format id of the pinned ``pokemon-showdown`` package -> whether it needs teams
    (no random-team generator) and its game type (``singles``, ``doubles``, ...)."""
    package = find_showdown()
    cache = _cache_file(package)
    cached = _read_cache(cache) if cache is not None else None
    if cached is not None:
        return cached
    cmd = [find_node(), "-e", _LIST_FORMATS, str(package / "dist" / "sim")]
    try:
        with NodeChild(cmd, name="the format listing", error=ShowdownError) as child:
            formats = _parse(json.loads(child.communicate(b"", timeout=120)))
    except (OSError, ShowdownError, ValueError) as exc:
        raise ShowdownError(f"could not list the simulator's formats: {exc}") from exc
    if cache is not None:
        _write_cache(cache, formats)
    return formats


def _parse(listed: object) -> dict[str, tuple[bool, str]]:
    """The listing's ``{id: [needs_team, game_type]}``; ``ValueError`` for anything else."""
    if not isinstance(listed, dict) or not listed:
        raise ValueError("not a format listing")
    formats = {}
    for key, entry in listed.items():
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], str)):
            raise ValueError(f"bad format entry {key!r}")
        formats[str(key)] = (bool(entry[0]), entry[1])
    return formats


def _cache_file(package: Path) -> Path | None:
    """Where the listing of ``package`` is kept: named by a digest of the package's version
    and its formats file's contents (~2 ms to hash); None if they cannot be read."""
    try:
        version = str(json.loads((package / "package.json").read_text())["version"])
        formats = (package / "dist" / "config" / "formats.js").read_bytes()
    except (OSError, ValueError, KeyError, TypeError):
        return None
    digest = hashlib.sha256(version.encode() + b"\0" + formats).hexdigest()[:24]
    return data_dir() / "cache" / f"formats-{digest}.json"


def _read_cache(path: Path) -> dict[str, tuple[bool, str]] | None:
    """The kept listing, or None when it is missing or not one (it is listed anew)."""
    try:
        return _parse(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None


def _write_cache(path: Path, formats: dict[str, tuple[bool, str]]) -> None:
    """Keep the listing (atomically: a temp file, then a rename); a folder that cannot be
    written only means the next process lists again."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".formats-", suffix=".tmp")
        with os.fdopen(fd, "w") as out:
            json.dump({key: list(value) for key, value in formats.items()}, out)
        os.replace(tmp, path)
    except OSError:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def check_format(battle_format: str, has_team: bool = False, team_key: str = "team") -> None:
    """``ValueError`` (one line) for a format the simulator does not know, with the closest
    names, or for a format that needs teams when none is given (naming ``team_key``, the
    caller's name for the team setting)."""
    formats = known_formats()
    key = "".join(c for c in battle_format.lower() if c.isalnum())
    if key not in formats:
        close = difflib.get_close_matches(key, formats, n=3, cutoff=0.6)
        hint = f"; closest: {', '.join(close)}" if close else ""
        raise ValueError(f"unknown battle format {battle_format!r}{hint}")
    needs_team, game_type = formats[key]
    if game_type not in GAME_TYPES or (game_type == "doubles") != is_doubles_format(key):
        raise ValueError(
            f"battle format {battle_format!r} is a {game_type} format: Maple plays singles and "
            "doubles formats (doubles: formats named vgc or doubles, as poke-env reads them)"
        )
    if needs_team and not has_team:
        raise ValueError(
            f"battle format {battle_format!r} needs a team for each player (no random teams): "
            f"set {team_key}=<team file or folder> (Showdown export or packed teams, "
            "docs/teams.md) or use a random-battle format such as gen9randombattle"
        )
