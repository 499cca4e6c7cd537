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
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from poke_env.teambuilder.teambuilder import Teambuilder

from mapleenv.showdown.package import ShowdownError, find_node, find_showdown

TEAMS_SCRIPT = Path(__file__).resolve().parents[1] / "js" / "teams.js"


@dataclass(frozen=True)
class Team:
    """One team: where it came from (for messages) and its packed text."""

    name: str
    packed: str


_cache: dict[tuple[Any, ...], tuple[Team, ...]] = {}


def team_files(path: Path) -> list[Path]:
    """The team files of ``path``: itself, or a folder's non-hidden files by name."""
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
    return [path]


def _run_script(battle_format: str | None, entries: list[dict[str, str]]) -> list[dict]:
    request = json.dumps({"format": battle_format, "teams": entries})
    try:
        proc = subprocess.run(
            [find_node(), str(TEAMS_SCRIPT), str(find_showdown())],
            input=request,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise ShowdownError(f"could not run the team validator: {exc}") from exc
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-3:]
        raise ShowdownError(f"the team validator failed: {' '.join(tail)}")
    return json.loads(proc.stdout)


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
    files = team_files(path)
    if not files:
        raise ValueError(f"{key}: no team files in folder {str(source)!r}")
    cache_key = (
        battle_format,
        tuple((str(f.resolve()), f.stat().st_mtime_ns, f.stat().st_size) for f in files),
    )
    if cache_key not in _cache:
        entries = []
        for f in files:
            try:
                entries.append((str(f), f.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError) as exc:
                raise ValueError(f"{key}: cannot read {f}: {exc}") from exc
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
