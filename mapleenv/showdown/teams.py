"""Fixed teams for formats without random teams (``gen9ou``...): team files, checked by the
pinned simulator's own ``TeamValidator``, and one drawn per battle.

A team source is a file holding one team (Showdown export/"paste" text, packed, or JSON:
whatever the simulator's ``Teams.import`` reads) or a folder (each non-hidden file in it
one team, in name order). :func:`load_teams` reads, validates and packs them in one Node
call (``mapleenv/js/teams.js``); :class:`TeamPool` is the poke-env ``Teambuilder`` that
gives each battle one of them, drawn from a seeded stream. docs/teams.md has the details.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from poke_env.teambuilder.teambuilder import Teambuilder

from mapleenv.paths import printable, read_small_file, size_text
from mapleenv.showdown.child import NodeChild
from mapleenv.showdown.package import ShowdownError, find_node, find_showdown
from mapleenv.showdown.snapshot import node_command

TEAMS_SCRIPT = Path(__file__).resolve().parents[1] / "js" / "teams.js"
MAX_TEAM_BYTES = 1 << 20  # one team file (a real one is ~1 KiB)
MAX_TEAM_FILES = 1000  # team files in a folder
MAX_TEAMS_BYTES = 16 << 20  # all the files of a folder together


@dataclass(frozen=True)
class Team:
    """One team: where it came from (for messages) and its packed text."""

    name: str
    packed: str


_cache: dict[tuple[Any, ...], tuple[Team, ...]] = {}


def team_files(path: Path, *, key: str = "team") -> list[Path]:
    """The team files of ``path``: itself, or a folder's non-hidden regular files by name
    (at most :data:`MAX_TEAM_FILES`: ``ValueError`` naming ``key`` past that). An entry
    that cannot be followed (a symlink loop, a dangling link) is a ``ValueError`` too."""
    if not path.is_dir():
        return [path]
    files = []
    with os.scandir(path) as entries:
        for entry in entries:
            if entry.name.startswith("."):
                continue
            try:
                if not stat.S_ISREG(os.stat(entry.path).st_mode):
                    continue  # folders, FIFOs, devices: skipped
            except OSError as exc:
                raise ValueError(
                    f"{key}: {printable(entry.path, max_len=300)} in team folder cannot be "
                    f"read: {exc.strerror or exc}"
                ) from None
            if len(files) == MAX_TEAM_FILES:
                raise ValueError(
                    f"{key}: folder {str(path)!r} has more than {MAX_TEAM_FILES} team files"
                )
            files.append(Path(entry.path))
    return sorted(files)


def read_team_file(path: Path, *, key: str = "team") -> str:
    """A team file's text: a regular file of at most :data:`MAX_TEAM_BYTES`, else a
    ``ValueError`` naming ``key``, the file and its kind or size
    (:func:`mapleenv.paths.read_small_file`: a FIFO or ``/dev/zero`` fails at once)."""
    return read_small_file(path, key=key, limit=MAX_TEAM_BYTES, what="a team file")


def _run_script(battle_format: str | None, entries: list[dict[str, str]]) -> list[dict]:
    request = json.dumps({"format": battle_format, "teams": entries}).encode()
    cmd = node_command(find_node(), TEAMS_SCRIPT, find_showdown())
    try:
        with NodeChild(cmd, name="the team validator", error=ShowdownError) as child:
            return json.loads(child.communicate(request, timeout=120))
    except OSError as exc:
        raise ShowdownError(f"could not run the team validator: {exc}") from exc


def check_teams(
    entries: Sequence[tuple[str, str]], battle_format: str | None, *, key: str = "team"
) -> tuple[Team, ...]:
    """Pack ``(name, text)`` teams; with a ``battle_format``, validate them for it.

    ``ValueError`` (one line) naming ``key``, the first bad team's name and the
    simulator's messages for it."""
    replies = _run_script(battle_format, [{"name": n, "text": t} for n, t in entries])
    for reply in replies:
        if reply["problems"]:
            problems = " ".join(" ".join(p.split()) for p in reply["problems"])
            verdict = f"not legal in {battle_format}" if reply["packed"] else "not a team"
            raise ValueError(f"{key}: {reply['name']} is {verdict}: {problems}")
    return tuple(Team(reply["name"], reply["packed"]) for reply in replies)


def load_teams(
    source: str | Path, battle_format: str | None, *, key: str = "team"
) -> tuple[Team, ...]:
    """The teams of a file or folder (see module docs), packed; validated for
    ``battle_format`` unless it is ``None``. A missing path, an empty folder, a file that
    is not a team or an illegal team is a ``ValueError`` naming ``key`` and the file.
    Results are cached per path, file times and format."""
    path = Path(source).expanduser()
    if not path.exists():
        raise ValueError(f"{key}: no such team file or folder: {str(source)!r}")
    files = team_files(path, key=key)
    if not files:
        raise ValueError(f"{key}: no team files in folder {str(source)!r}")
    stats = [f.stat() for f in files]
    cache_key = (
        battle_format,
        tuple(
            (str(f.resolve()), s.st_mtime_ns, s.st_size, s.st_mode)
            for f, s in zip(files, stats, strict=True)
        ),
    )
    if cache_key not in _cache:
        entries, total = [], 0
        for f in files:
            text = read_team_file(f, key=key)
            total += len(text)
            if total > MAX_TEAMS_BYTES:
                raise ValueError(
                    f"{key}: the team files of {str(source)!r} hold over "
                    f"{size_text(MAX_TEAMS_BYTES)}"
                )
            entries.append((str(f), text))
        _cache[cache_key] = check_teams(entries, battle_format, key=key)
    return _cache[cache_key]


def is_team_text(value: str) -> bool:
    """Whether a string is a team itself (export or packed text) rather than a path."""
    return "\n" in value or "|" in value


def read_teams(
    source: str | Path, battle_format: str | None, *, key: str = "team"
) -> tuple[Team, ...]:
    """:func:`load_teams` for a path, or one team's text (a string with a newline or
    ``|``), checked the same way."""
    if isinstance(source, str) and is_team_text(source):
        if len(source) > MAX_TEAM_BYTES:
            raise ValueError(
                f"{key}: team text of {len(source)} characters (at most {MAX_TEAM_BYTES})"
            )
        return check_teams([(f"<{key} text>", source)], battle_format, key=key)
    return load_teams(source, battle_format, key=key)


class TeamPool(Teambuilder):
    """A poke-env ``Teambuilder`` that gives each battle one of ``teams``, drawn uniformly
    from ``numpy.random.default_rng([stream, seed])`` (``seed=None``: fresh entropy), so
    a seeded env draws the same teams in the same order; ``stream`` keeps the agent's and
    the opponent's draws apart. ``last`` is the team drawn last."""

    def __init__(self, teams: Sequence[Team], seed: int | None = None, stream: int = 0):
        if not teams:
            raise ValueError("TeamPool needs at least one team")
        self.teams = tuple(teams)
        self.stream = stream
        self.last: Team | None = None
        self.seed(seed)

    def seed(self, seed: int | None) -> None:
        """Restart the stream of draws."""
        self._rng = np.random.default_rng(None if seed is None else [self.stream, seed])

    def yield_team(self) -> str:
        self.last = self.teams[int(self._rng.integers(len(self.teams)))]
        return self.last.packed


def team_pool(
    team: Any,
    battle_format: str,
    *,
    seed: int | None = None,
    stream: int = 0,
    key: str = "team",
    validate: bool = True,
) -> Teambuilder | None:
    """A ``Teambuilder`` from any team argument (``None`` stays ``None``):

    * a ``Teambuilder``: used as it is (not validated);
    * a :class:`Team` or a sequence of them (already loaded): a :class:`TeamPool`;
    * a string with a newline or ``|``: one team's text (export or packed);
    * else a path (``str`` or ``Path``) to a team file or folder (:func:`load_teams`).

    Text and files are validated for ``battle_format`` when ``validate`` is true."""
    if team is None or isinstance(team, Teambuilder):
        return team
    if isinstance(team, Team):
        team = (team,)
    elif isinstance(team, str | Path):
        team = read_teams(team, battle_format if validate else None, key=key)
    if not (isinstance(team, Sequence) and team and all(isinstance(t, Team) for t in team)):
        raise TypeError(f"{key}: expected a path, team text, Teams or a Teambuilder: {team!r}")
    return TeamPool(team, seed=seed, stream=stream)
