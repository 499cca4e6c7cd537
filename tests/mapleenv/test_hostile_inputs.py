"""Hostile names and files (issue #21): a server's room id cannot write outside the replay
folder, a nickname cannot break the replay page, team and password files are bounded
(a FIFO or /dev/zero fails at once, a huge file is refused before it is read), and
external names are safe in file names and log lines (docs/security.md)."""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest
from poke_env.battle.battle import Battle

from mapleenv.limits import CapacityError, capacity, check_capacity
from mapleenv.paths import printable, safe_filename
from mapleenv.replays import record_path, replay_html, replay_path, save_replay
from mapleenv.showdown.teams import MAX_TEAM_BYTES, MAX_TEAM_FILES, load_teams, read_teams

HOSTILE = '<!--<script>alert(1)</script>--></title><b x="'  # a nickname a server may send


def hostile_battle(tag: str = "battle-gen9randombattle-7") -> Battle:
    """A finished battle parsed from protocol lines a hostile server sent: a nickname made
    to close tags and start a comment and a script."""
    battle = Battle(tag, "maple", logging.getLogger("hostile"), gen=9)
    battle._player_role = "p1"
    for line in [
        "|player|p1|maple|1|",
        f"|player|p2|{HOSTILE}|2|",
        "|tier|[Gen 9] Random Battle",
        "|start",
        f"|switch|p1a: {HOSTILE}|Pikachu, L50|100/100",
        "|switch|p2a: Eevee|Eevee, L50|100/100",
        "|turn|1",
        f"|move|p1a: {HOSTILE}|Thunderbolt|p2a: Eevee",
        "|-damage|p2a: Eevee|0 fnt",
        "|faint|p2a: Eevee",
    ]:
        battle.parse_message(line.split("|"))
    battle.won_by("maple")
    return battle


class _Elements(HTMLParser):
    """The page's elements as a browser's tokenizer sees them, and the log block's text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.starts: list[str] = []
        self.data: list[str] = []
        self._in_log = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.starts.append(tag)
        self._in_log = tag == "script" and ("class", "battle-log-data") in attrs

    def handle_endtag(self, tag: str) -> None:
        self._in_log = False

    def handle_data(self, data: str) -> None:
        if self._in_log:
            self.data.append(data)


def test_a_room_id_with_dot_dot_cannot_leave_the_replay_folder(tmp_path: Path) -> None:
    folder = tmp_path / "run" / "replays"
    battle = hostile_battle("battle-../../../escaped")
    written = save_replay(battle, folder)  # what PokemonEnv does with replay_dir
    assert written.parent == folder and written.name == safe_filename(battle.battle_tag) + ".html"
    assert replay_path(folder, battle.battle_tag) == written
    # the server backend's frame records (record_dir) are named the same way
    assert record_path(folder, battle.battle_tag) == written.with_suffix(".jsonl")
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == [written]
    for name in ["..", ".", "a/b", "a\\b", "x\x00y", "/etc/passwd", "", "é" * 300]:
        safe = safe_filename(name)
        assert re.fullmatch(r"[A-Za-z0-9_.-]{1,120}", safe) and not safe.startswith(".")
    assert safe_filename("battle-gen9randombattle-42") == "battle-gen9randombattle-42"
    assert safe_filename("a/b") != safe_filename("a\\b")  # no two names on one file


def test_a_hostile_nickname_cannot_break_the_replay_page() -> None:
    page = replay_html(hostile_battle())
    parser = _Elements()
    parser.feed(page)
    # the page's own elements only (the log, the viewer's data, the offline viewer, the
    # online one): the nickname opened no <script> or <b>
    assert parser.starts.count("script") == 4 and "b" not in parser.starts
    [data] = re.findall(r'class="battle-log-data">(.*?)</script>', page, re.DOTALL)
    # HTML's script-data rules (which Python's parser does not model): "</script" ends the
    # block early; "<!--" followed by "<script" makes its real "</script>" not count, and
    # the block swallows the rest of the page. Neither may appear in the log block.
    assert "</" not in data and "<!--" not in data
    assert "<!--" not in page.split("<!-- version 1 -->", 1)[1]  # no comment opened
    log = "".join(parser.data).replace("\\/", "/")  # what replay-embed.js reads
    escaped = HOSTILE.replace("<!--", "<\\!--")  # the one change beyond Showdown's \\/
    assert f"|player|p2|{escaped}|2|" in log.split("\n")
    inline = page.split('<div class="inner">', 1)[1]
    assert HOSTILE not in inline and "&lt;!--&lt;script&gt;" in inline


def test_printable_keeps_a_name_on_one_log_line() -> None:
    assert printable("evil\n[ERROR] forged\x1b[2J") == "evil\\n[ERROR] forged\\x1b[2J"
    assert len(printable("x" * 10_000)) < 300


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "team.fifo"
    os.mkfifo(path)
    return path


def _within(seconds: float, call, *args, **kwargs):
    """Run ``call`` in a thread; fail (not hang) if it has not ended within ``seconds``."""
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = call(*args, **kwargs)
        except BaseException as exc:  # handed to the test
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    start = time.monotonic()
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{call.__name__} still running after {seconds} s"
    return outcome, time.monotonic() - start


@pytest.mark.parametrize(
    ("source", "kind"),
    [("fifo", "a FIFO (named pipe)"), ("/dev/zero", "a character device")],
)
def test_a_fifo_or_a_device_as_team_fails_at_once(source: str, kind: str, request) -> None:
    path = request.getfixturevalue("fifo") if source == "fifo" else Path(source)
    outcome, took = _within(10, load_teams, path, None, key="env.team")
    assert took < 5
    assert isinstance(outcome.get("error"), ValueError)
    assert str(outcome["error"]) == f"env.team: {path} is {kind}, not a team file"


def test_an_oversized_team_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    with big.open("wb") as handle:  # a sparse 560 MB file: its size, not its bytes
        handle.truncate(560 * 10**6)
    with pytest.raises(ValueError) as info:
        load_teams(big, None, key="team")
    assert str(info.value) == (
        f"team: {big} is 534.1 MiB; a team file may have at most {MAX_TEAM_BYTES >> 20}.0 MiB"
    )
    with pytest.raises(ValueError, match=r"team: team text of \d+ characters"):
        read_teams("|" * (MAX_TEAM_BYTES + 1), None, key="team")


def test_a_team_folder_has_a_bounded_number_of_files(tmp_path: Path, fifo: Path) -> None:
    for i in range(MAX_TEAM_FILES + 1):
        (tmp_path / f"t{i:04}.txt").write_text("Pikachu\n")
    with pytest.raises(ValueError, match=f"more than {MAX_TEAM_FILES} team files"):
        load_teams(tmp_path, None, key="env.team")


def test_the_process_count_is_checked_against_the_machine() -> None:
    limit, cores, available = capacity()
    assert 1 <= limit <= 32 * cores and available > 0
    check_capacity(limit)  # as many as it holds: fine
    with pytest.raises(CapacityError) as info:
        check_capacity(1_000_000, sim_hosts=2, what="env.num_envs", override="X=true")
    message = str(info.value)
    assert "\n" not in message and message.startswith("env.num_envs=1000000 (+ 2 simulator")
    assert "would start 1000002 processes" in message and "set X=true" in message
    check_capacity(1_000_000, allow_oversubscribe=True)  # the documented way out
