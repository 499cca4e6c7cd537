"""The battle formats the pinned simulator knows, to stop a bad ``battle_format`` at start
(the simulator would otherwise fall back or fail deep in a battle)."""

from __future__ import annotations

import difflib
import functools
import json
import subprocess

from mapleenv.showdown.package import ShowdownError, find_node, find_showdown

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
    sim = find_showdown() / "dist" / "sim"
    try:
        proc = subprocess.run(
            [find_node(), "-e", _LIST_FORMATS, str(sim)],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return {
            key: (bool(team), str(game)) for key, (team, game) in json.loads(proc.stdout).items()
        }
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        raise ShowdownError(f"could not list the simulator's formats: {exc}") from exc


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
