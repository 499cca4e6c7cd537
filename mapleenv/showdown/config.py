"""The ``config/config.js`` and server directory Maple writes for each Showdown server.

The package resolves ``config/config.js``, ``logs/`` and friends relative to its own
root (``dist/lib/fs.js`` derives ``ROOT_PATH`` from ``__dirname``), not the CWD. To
give every server its own config and logs without touching ``node_modules``, each
server gets a *server directory*: symlinks to the package's read-only parts
(``dist``, ``data``, ``server``, ...) plus a real ``config/`` and ``logs/``. Node runs
with ``--preserve-symlinks --preserve-symlinks-main`` so that ``__dirname`` (and hence
the package root) is the server directory.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mapleenv.files import write_atomic
from mapleenv.showdown.package import HOST, find_showdown

# Package entries linked into every server directory (read-only parts of the package).
LINKED_ENTRIES = (
    "dist",
    "data",
    "server",
    "translations",
    "databases",
    "package.json",
    "pokemon-showdown",
)
# every link Maple makes in a server directory (a run folder may keep them after a crash)
SERVER_LINKS = (*LINKED_ENTRIES, "node_modules")

# Config overrides on top of the package's config-example.js. Everything that
# throttles, punishes, locks down, logs or phones home is switched off.
DEFAULT_CONFIG: dict[str, Any] = {
    "bindaddress": HOST,
    "subprocesses": 0,  # battles simulated in the server process (see module docs)
    "nothrottle": True,
    "noipchecks": True,
    "noguestsecurity": True,
    "punishmentautolock": False,
    "autolockdown": False,
    "crashguard": True,
    "logchat": False,
    "logchallenges": False,
    "loguserstats": 0,
    "reportjoins": False,
    "reportbattles": False,
    "reportbattlejoins": False,
    "repl": False,
    "watchconfig": False,
    "backdoor": False,
    "consoleips": [],  # no console (/eval, >>, /hotpatch) for anyone, local clients included
    "nofswriting": True,
    "noNetRequests": True,
    "forcetimer": False,
    "serverid": "maple",
}


def render_config(
    port: int, overrides: dict[str, Any] | None = None, package: Path | None = None
) -> str:
    """Text of the ``config/config.js`` Maple writes (config-example + overrides)."""
    package = package or find_showdown()
    values = {**DEFAULT_CONFIG, **(overrides or {}), "port": port}
    example = json.dumps(str(package / "config" / "config-example.js"))
    lines = [
        "'use strict';",
        "// Written by Maple (mapleenv/showdown): config-example.js plus Maple's overrides.",
        f"Object.assign(exports, require({example}));",
    ]
    lines += [f"exports.{key} = {json.dumps(value)};" for key, value in values.items()]
    if "startuphook" not in values:
        lines.append(_STARTUP_HOOK)
    return "\n".join(lines) + "\n"


# The server builds the |formats| list sent to every client on the first connection,
# computing each format's rule table (that loads every mod: ~5 s of CPU). Clients
# like poke-env ignore the list, so Maple builds it at startup from the format names
# and flags only (the "level 50" display flag is dropped). The hook also frees ended
# battle rooms once empty (the server grew ~200 MB/min in training without it).
_STARTUP_HOOK = """\
exports.startuphook = function () {
  let text = '|formats' + (Ladders.formatsListPrefix || '');
  let section = '', shown = '', column = 1;
  for (const format of Dex.formats.all()) {
    if (format.section) section = format.section;
    if (format.column) column = format.column;
    if (!format.name || !(format.challengeShow || format.searchShow || format.tournamentShow)) {
      continue;
    }
    if (section !== shown) { shown = section; text += `|,${column}|${section}`; }
    const flags = (format.team ? 1 : 0) | (format.searchShow ? 2 : 0) |
      (format.challengeShow ? 4 : 0) | (format.tournamentShow ? 8 : 0);
    text += `|${format.name},${flags.toString(16)}`;
  }
  Rooms.global.formatList = text;
  // An ended battle's room is kept 10 minutes after its last user left (for people
  // re-reading it); Maple plays thousands of battles an hour and its players leave each
  // room as the battle ends, so an ended, empty battle room is freed at once.
  // A battle log being written (logchallenges) needs its room until the write is done.
  const logBattle = Rooms.RoomBattle.prototype.logBattle;
  Rooms.RoomBattle.prototype.logBattle = function (...args) {
    this.mapleLogWritten = Promise.resolve(logBattle.apply(this, args)).catch(() => {});
    return this.mapleLogWritten;
  };
  const onLeave = Rooms.GameRoom.prototype.onLeave;
  Rooms.GameRoom.prototype.onLeave = function (user) {
    const left = onLeave.call(this, user);
    if (left && !this.userCount && this.battle && this.battle.ended) {
      void Promise.resolve(this.battle.mapleLogWritten).then(() => {
        if (!this.userCount && Rooms.get(this.roomid) === this) this.expire();
      });
    }
    return left;
  };
};"""


def prepare_server_dir(
    directory: Path, port: int, package: Path | None = None, overrides: dict[str, Any] | None = None
) -> Path:
    """Create (or refresh) a server directory for ``port``; returns it."""
    package = package or find_showdown()
    directory.mkdir(parents=True, exist_ok=True)
    for name in LINKED_ENTRIES:
        _link(directory / name, package / name)
    # Dependencies (sockjs, ...) are hoisted next to the package by npm.
    modules = package / "node_modules"
    if not modules.is_dir() and package.parent.name == "node_modules":
        modules = package.parent
    if modules.is_dir():
        _link(directory / "node_modules", modules)
    (directory / "config" / "chat-plugins").mkdir(parents=True, exist_ok=True)
    (directory / "logs" / "repl").mkdir(parents=True, exist_ok=True)
    # a new file (never through a link a run folder someone sent may hold there)
    write_atomic(directory / "config" / "config.js", render_config(port, overrides, package))
    return directory


def _link(link: Path, target: Path) -> None:
    """``link`` -> ``target``: a link already there (a crashed run's, or one a folder you
    were sent holds) is pointed at the package again; a missing target makes none."""
    if not target.exists():
        return
    if link.is_symlink():
        if os.readlink(link) == str(target):
            return
        link.unlink()
    link.symlink_to(target)
