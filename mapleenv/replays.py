"""Battle replays as HTML files in the format of Showdown's own downloaded replays.

A replay holds the battle's protocol log as the agent saw it in
``<script type="text/plain" class="battle-log-data">`` (``/`` written ``\\/``, as Showdown
does, so no line can close the script, and ``<!--`` written ``<\\!--``, so none can turn
the script's end into text: :func:`script_data`). Three views read it:

* Maple's offline viewer (``js/replay_view.js``, inlined into the page: no network), which
  renders the battle turn by turn into ``#maple-replay``: both sides' Pokémon with HP bars,
  status and boosts, the field, each event, the winner and the agent's recorded choices
  (``<script type="application/json" class="maple-replay-data">``: :func:`viewer_data`);
* Showdown's replay viewer (``replay-embed.js``, loaded from play.pokemonshowdown.com),
  which animates it above when the browser is online;
* the same battle as text (``battle-log-inline``), for a browser without JavaScript
  (the offline viewer hides it behind a button). poke-env's own ``save_replay`` leaves
  that text part empty and hidden.

The log comes from poke-env's ``Battle._replay_data`` (every message the battle parsed):
the one place this module reads poke-env's private state.
"""

from __future__ import annotations

import functools
import html
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from poke_env.battle.abstract_battle import AbstractBattle

from mapleenv.files import write_atomic
from mapleenv.paths import safe_filename

VIEWER = "https://play.pokemonshowdown.com/js/replay-embed.js"
OFFLINE_VIEWER = Path(__file__).resolve().parent / "js" / "replay_view.js"

_STATS = {
    "atk": "Attack",
    "def": "Defense",
    "spa": "Sp. Atk",
    "spd": "Sp. Def",
    "spe": "Speed",
    "accuracy": "accuracy",
    "evasion": "evasiveness",
}
_STATUS = {
    "brn": "was burned",
    "par": "is paralyzed",
    "psn": "was poisoned",
    "tox": "was badly poisoned",
    "slp": "fell asleep",
    "frz": "was frozen solid",
}
_BOOST = {1: "", 2: " sharply", 3: " drastically"}
# Lines that carry nothing a reader needs (set-up, timers, requests, chat markup).
_SILENT = {
    "",
    "init",
    "title",
    "j",
    "J",
    "l",
    "L",
    "n",
    "N",
    "gametype",
    "gen",
    "player",
    "teamsize",
    "upkeep",
    "t:",
    "request",
    "split",
    "inactive",
    "inactiveoff",
    "timer",
    "raw",
    "html",
    "uhtml",
    "uhtmlchange",
    "c",
    "c:",
    "chat",
    "badge",
    "teampreview",
    "clearpoke",
    "poke",
    "seed",
}


def protocol_log(battle: AbstractBattle) -> list[str]:
    """The battle's protocol lines (``|move|p1a: ...``), ending with ``|win|`` or ``|tie``
    once it is finished."""
    lines = ["|".join(message) for message in battle._replay_data]
    ended = any(line.startswith(("|win|", "|tie")) for line in lines)
    if battle.finished and not ended:
        if battle.won:
            lines.append(f"|win|{battle.player_username}")
        elif battle.lost:
            lines.append(f"|win|{battle.opponent_username or 'Opponent'}")
        else:
            lines.append("|tie")
    return lines


# A number as Showdown writes one: ASCII digits, at most one decimal point, short. A server's
# text is untrusted: "1e999" (inf), "nan", "²" (a digit to str.isdigit) are not numbers here.
_NUMBER = re.compile(r"[0-9]{1,9}(?:\.[0-9]{1,6})?")


def _small_int(text: str, default: int | None = None) -> int | None:
    """``text`` as a non-negative integer of at most 9 ASCII digits, else ``default``."""
    return int(text) if _NUMBER.fullmatch(text) and "." not in text else default


def _hp_percent(hp: str) -> int | None:
    """``"123/277 par"`` -> 44 (percent, 0..100); None for what is not an HP."""
    value = hp.split()[0] if hp else ""
    if value == "0":
        return 0
    current, sep, maximum = value.partition("/")
    if not (sep and _NUMBER.fullmatch(current) and _NUMBER.fullmatch(maximum)):
        return None
    top = float(maximum)
    return min(100, round(100 * float(current) / top)) if top > 0 else None


class _TextLog:
    """Protocol lines -> HTML sentences, from one side's point of view."""

    def __init__(self, side: str | None):
        self.side = side
        self.players: dict[str, str] = {}
        self.hp: dict[str, int] = {}
        self.out: list[str] = []

    def mon(self, ident: str, start: bool = False) -> str:
        side, _, name = ident.partition(": ")
        text = html.escape(name or ident)
        if self.side is not None and side[:2] != self.side:
            text = f"{'The' if start else 'the'} opposing {text}"
        return text

    def key(self, ident: str) -> str:
        side, _, name = ident.partition(": ")
        return f"{side[:2]}: {name}"

    def say(self, text: str, small: bool = False) -> None:
        self.out.append(f"<div><small>{text}</small></div>" if small else f"<div>{text}</div>")

    def hp_change(self, args: list[str], verb: str) -> None:
        ident, hp = args[0], args[1]
        now, before = _hp_percent(hp), self.hp.get(self.key(ident))
        if now is None:
            return
        self.hp[self.key(ident)] = now
        source = next((a for a in args[2:] if a.startswith("[from]")), "")
        source = f" <small>{html.escape(source)}</small>" if source else ""
        if before is None:
            self.say(f"({self.mon(ident, True)} has {now}% of its health.){source}")
        else:
            lost = abs(before - now)
            self.say(f"({self.mon(ident, True)} {verb} {lost}% of its health!){source}")

    def line(self, line: str) -> None:
        parts = line.split("|")[1:] if line.startswith("|") else []
        if not parts or parts[0] in _SILENT:
            if parts[:1] == ["player"] and len(parts) > 2:
                self.players[parts[1]] = parts[2]
            return
        kind, args = parts[0], parts[1:] + ["", "", ""]
        if kind == "tier":
            self.say(f"<strong>{html.escape(args[0])}</strong>")
        elif kind == "rule":
            self.say(html.escape(args[0]), small=True)
        elif kind == "start":
            names = " and ".join(html.escape(n) for n in self.players.values())
            self.say(f"Battle started between {names}!")
        elif kind == "turn":
            self.out.append(f'<h2 class="battle-history">Turn {html.escape(args[0])}</h2>')
        elif kind in ("switch", "drag"):
            player = html.escape(self.players.get(args[0][:2], args[0][:2]))
            name = html.escape(args[0].partition(": ")[2] or args[0])
            self.say(f"{player} sent out {name}!")
            hp = _hp_percent(args[2])
            if hp is not None:
                self.hp[self.key(args[0])] = hp
        elif kind == "move":
            self.say(f"{self.mon(args[0], True)} used <strong>{html.escape(args[1])}</strong>!")
        elif kind == "-damage":
            self.hp_change(args, "lost")
        elif kind == "-heal":
            self.hp_change(args, "restored")
        elif kind == "cant":
            self.say(f"{self.mon(args[0], True)} can't move ({html.escape(args[1])})!")
        elif kind == "faint":
            self.say(f"{self.mon(args[0], True)} fainted!")
        elif kind in ("-boost", "-unboost"):
            stat = _STATS.get(args[1], html.escape(args[1]))
            amount = _small_int(args[2], 1)
            verb = "rose" if kind == "-boost" else "fell"
            self.say(f"{self.mon(args[0], True)}'s {stat} {verb}{_BOOST.get(amount, '')}!")
        elif kind == "-status":
            status = _STATUS.get(args[1], f"got {html.escape(args[1])}")
            self.say(f"{self.mon(args[0], True)} {status}!")
        elif kind == "-terastallize":
            ty = html.escape(args[1])
            self.say(f"{self.mon(args[0], True)} has Terastallized into the {ty}-type!")
        elif kind == "-supereffective":
            self.say("It's super effective!")
        elif kind == "-resisted":
            self.say("It's not very effective...")
        elif kind == "-crit":
            self.say("A critical hit!")
        elif kind == "-immune":
            self.say(f"It doesn't affect {self.mon(args[0])}...")
        elif kind == "-miss":
            self.say(f"{self.mon(args[1] or args[0], True)} avoided the attack!")
        elif kind == "-fail":
            self.say("But it failed!")
        elif kind == "win":
            self.say(f"<strong>{html.escape(args[0])} won the battle!</strong>")
        elif kind == "tie":
            self.say("<strong>The battle ended in a tie!</strong>")
        else:  # anything else: its protocol fields, readable enough
            self.say(html.escape(" ".join(p for p in parts if p)), small=True)


def text_log(lines: Iterable[str], side: str | None = None) -> str:
    """The battle as HTML text (a heading per turn, a sentence per event), seen by
    ``side`` (``"p1"``/``"p2"``: the other side's Pokémon are "the opposing ...")."""
    log = _TextLog(side)
    for line in lines:
        log.line(line)
    return "\n".join(log.out)


# The offline viewer's look (js/replay_view.js builds the elements): a turn is a row of
# the agent's side, the events and the other side; HP bars green > 50% > yellow > 20% > red.
_VIEWER_CSS = """
.maple-replay {max-width: 1180px; margin: 0 auto 24px; padding: 0 8px}
.mr-result {font-size: 13pt; font-weight: bold; text-align: center; margin: 8px 0}
.mr-toggle {display: block; margin: 0 auto 8px}
.mr-turn {border: 1px solid #AAA; background: #F6F8FA; margin: 0 0 8px}
.mr-turn h2 {margin: 0; padding: 4px 8px; background: #E0E7EA; font-size: 12pt}
.mr-fieldstate {float: right; font-weight: normal; font-size: 9pt; color: #3A4A66}
.mr-row {display: grid; grid-template-columns: 1fr 1.4fr 1fr; gap: 8px; padding: 6px}
.mr-player {font-weight: bold; margin-bottom: 4px}
.mr-agent {background: #2B6CB0; color: white; border-radius: 3px; padding: 0 4px;
  margin-left: 6px; font-size: 8pt}
.mr-mon {margin: 2px 0 4px; opacity: 0.75}
.mr-mon.mr-active {opacity: 1; font-weight: bold}
.mr-mon.mr-fainted {opacity: 0.4; text-decoration: line-through}
.mr-name small {font-weight: normal}
.mr-status {background: #B7791F; color: white; border-radius: 3px; padding: 0 3px;
  margin-left: 4px; font-size: 8pt}
.mr-hp {display: flex; align-items: center; gap: 6px}
.mr-bar {flex: 1; height: 7px; background: #DDD; border: 1px solid #999; border-radius: 3px}
.mr-fill {height: 100%; border-radius: 2px}
.mr-high {background: #38A169} .mr-mid {background: #D69E2E} .mr-low {background: #E53E3E}
.mr-pct {width: 48px; font-size: 8pt; font-weight: normal}
.mr-tags, .mr-unseen {font-size: 8pt; font-weight: normal; color: #3A4A66}
.mr-events {margin: 0; padding: 0; list-style: none}
.mr-ev-move {font-weight: bold} .mr-ev-damage {color: #9B2C2C} .mr-ev-heal {color: #276749}
.mr-ev-faint {font-weight: bold; color: #9B2C2C} .mr-ev-field, .mr-ev-effect {color: #3A4A66}
.mr-ev-small, .mr-ev-other {font-size: 8pt; color: #666} .mr-ev-result {font-weight: bold}
.mr-ev-title {font-weight: bold}
.mr-ev-decision {background: #EBF4FF;
  border-left: 3px solid #2B6CB0; padding-left: 4px}
"""

_PAGE = """<!DOCTYPE html>
<meta charset="utf-8" />
<!-- version 1 -->
<title>{title}</title>
<style>
html, body {{font-family: Verdana, sans-serif; font-size: 10pt; margin: 0; padding: 0}}
body {{padding: 12px 0}}
.battle-log-inline {{border: 1px solid #AAA; background: #EEF2F5; color: black;
  max-width: 640px; margin: 0 auto 80px; padding-bottom: 5px}}
.battle-log-inline .inner {{padding: 4px 8px 0 8px}}
.battle-log-inline h2 {{margin: 0.5em -8px; padding: 4px 8px; border: 1px solid #AAA;
  border-left: 0; border-right: 0; background: #E0E7EA; font-size: 13pt}}
.subtle {{color: #3A4A66}}
{css}</style>
<div class="wrapper replay-wrapper" style="max-width:1180px;margin:0 auto">
<input type="hidden" name="replayid" value="{replay_id}" />
<div class="battle"></div><div class="battle-log"></div><div class="replay-controls"></div><div class="replay-controls-2"></div>
<h1 style="font-weight:normal;text-align:center"><strong>{tier}</strong><br /><span class="subtle">{p1}</span> vs. <span class="subtle">{p2}</span></h1>
<script type="text/plain" class="battle-log-data">{data}</script>
</div>
<div id="maple-replay" class="maple-replay"></div>
<script type="application/json" class="maple-replay-data">{extra}</script>
<div class="battle-log battle-log-inline"><div class="inner">
{text}
</div></div>
<script>
{offline_viewer}</script>
<script>
let daily = Math.floor(Date.now()/1000/60/60/24);document.write('<script src="{viewer}?version'+daily+'"></'+'script>');
</script>
"""  # noqa: E501 (HTML lines)


@functools.cache
def offline_viewer() -> str:
    """The offline viewer's JavaScript (``js/replay_view.js``, package data), read once."""
    return OFFLINE_VIEWER.read_text(encoding="utf-8")


def decision(
    battle: AbstractBattle, choice: str, probability: float | None = None
) -> dict[str, Any]:
    """The agent's ``choice`` (``"move thunderbolt"``) made now in ``battle``, for a replay's
    ``decisions``: where in the log it was made (the viewer shows it there), the turn, and
    the policy's probability of it when the caller knows it."""
    record: dict[str, Any] = {"line": len(battle._replay_data), "turn": battle.turn}
    record["choice"] = choice
    if probability is not None:
        record["probability"] = float(probability)
    return record


def viewer_data(battle: AbstractBattle, decisions: Sequence[dict[str, Any]]) -> str:
    """What the offline viewer needs beyond the log, as JSON for the page: the agent's side,
    its whole team (the log names a Pokémon only once it is sent out) and ``decisions``.
    ``<`` is written ``\\u003c`` (the same JSON), so no ``</script`` or ``<!--`` is in it."""
    extra = {
        "side": battle.player_role or "",
        "team": [key.partition(": ")[2] or key for key in battle.team],
        "decisions": list(decisions),
    }
    return json.dumps(extra).replace("<", "\\u003c")


def replay_html(battle: AbstractBattle, decisions: Sequence[dict[str, Any]] = ()) -> str:
    """A replay file's text for ``battle`` with the agent's ``decisions`` (:func:`decision`
    records; see module docs)."""
    lines = protocol_log(battle)
    players = {}
    for line in lines:
        parts = line.split("|")
        if len(parts) > 3 and parts[1] == "player" and parts[3]:
            players[parts[2]] = parts[3]
    tier = next((line.split("|", 2)[2] for line in lines if line.startswith("|tier|")), "")
    return _PAGE.format(
        title=html.escape(f"{tier or battle.battle_tag}: {' vs. '.join(players.values())}"),
        replay_id=html.escape(battle.battle_tag.removeprefix("battle-")),
        tier=html.escape(tier or battle.battle_tag),
        p1=html.escape(players.get("p1", "p1")),
        p2=html.escape(players.get("p2", "p2")),
        data=script_data("\n".join(lines)),
        extra=viewer_data(battle, decisions),
        text=text_log(lines, battle.player_role),
        css=_VIEWER_CSS,
        offline_viewer=offline_viewer(),
        viewer=VIEWER,
    )


def script_data(text: str) -> str:
    """``text`` for the inside of a ``<script type="text/plain">`` block: ``/`` as ``\\/``
    (Showdown's own escape, which its replay viewer undoes), so no ``</script`` can close
    the block early, and ``<!--`` as ``<\\!--``, which would otherwise start HTML's
    "escaped" script state, where a ``<script`` in a nickname makes the block's real
    ``</script>`` not count and swallows the rest of the page."""
    return text.replace("/", "\\/").replace("<!--", "<\\!--")


def replay_path(directory: str | Path, battle_tag: str) -> Path:
    """Where the replay of ``battle_tag`` goes in ``directory``: the tag comes from the
    server, so it is made a safe file name (:func:`mapleenv.paths.safe_filename`)."""
    return Path(directory) / f"{safe_filename(battle_tag)}.html"


def record_path(directory: str | Path, battle_tag: str) -> Path:
    """Where the frame record of ``battle_tag`` goes in ``directory`` (the server backend's
    ``record_dir``): a safe file name, like :func:`replay_path`."""
    return Path(directory) / f"{safe_filename(battle_tag)}.jsonl"


def save_replay(
    battle: AbstractBattle, directory: str | Path, decisions: Sequence[dict[str, Any]] = ()
) -> Path:
    """Write ``battle``'s replay file (with the agent's ``decisions``) into ``directory``
    (created) under :func:`replay_path` (the battle tag made a safe file name: a server's
    room id such as ``battle-../../x`` cannot point outside the folder); returns where it
    went. Written atomically: a new file, never through a link."""
    path = replay_path(directory, battle.battle_tag)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(path, replay_html(battle, decisions))
