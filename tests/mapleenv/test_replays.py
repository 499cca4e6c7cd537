"""Saved replays hold the battle log the way Showdown's replay viewer reads it
(``battle-log-data``) and the battle as text for a browser without the viewer."""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path

import pytest
from conftest import RECORDED_BATTLES, replay_decisions
from warm_cli import run_python

from mapleenv.replays import protocol_log, replay_html, text_log

# the tests marked backends use the default backend: the CI's second pass repeats them with
# MAPLE_BACKEND=server (the others name their backend, or start no env)

ROOT = Path(__file__).resolve().parents[2]
DATA = re.compile(r'<script type="text/plain" class="battle-log-data">(.*?)</script>', re.DOTALL)
INLINE = re.compile(
    r'<div class="battle-log battle-log-inline"><div class="inner">(.*?)</div></div>', re.DOTALL
)


def check_replay(page: str) -> tuple[list[str], int]:
    """The log lines of a replay page (as the viewer reads them) and its last turn, after
    checking that the page's text part shows every turn and the result."""
    [data] = DATA.findall(page)
    assert "</" not in data  # nothing in the log can close the script early
    lines = data.replace("\\/", "/").split("\n")  # what replay-embed.js does
    turns = [int(line.split("|")[2]) for line in lines if line.startswith("|turn|")]
    assert turns == list(range(1, len(turns) + 1)) and turns
    [text] = INLINE.findall(page)
    assert re.findall(r"<h2 class=\"battle-history\">Turn (\d+)</h2>", text) == [
        str(t) for t in turns
    ]
    assert "won the battle!" in text or "ended in a tie" in text
    assert "sent out" in text and " used <strong>" in text
    return lines, turns[-1]


@pytest.mark.parametrize("path", RECORDED_BATTLES[:1], ids=lambda p: p.name)
def test_replay_of_a_recorded_battle(path: Path) -> None:
    _, battle = replay_decisions(path, lambda b: None)
    page = replay_html(battle)
    lines, last_turn = check_replay(page)
    assert lines == protocol_log(battle)
    assert last_turn == battle.turn
    moves = sum(line.startswith("|move|") for line in lines)
    assert page.count(" used <strong>") == moves  # one sentence per move


def test_text_log_sentences_from_one_side() -> None:
    lines = [
        "|player|p1|Ash|1|",
        "|player|p2|Gary|2|",
        "|start",
        "|switch|p1a: Pika|Pikachu, L50|100/100",
        "|switch|p2a: Eevee|Eevee, L50|100/100",
        "|turn|1",
        "|move|p2a: Eevee|Tackle|p1a: Pika",
        "|-damage|p1a: Pika|60/100",
        "|move|p1a: Pika|Thunderbolt|p2a: Eevee",
        "|-crit|p2a: Eevee",
        "|-damage|p2a: Eevee|0 fnt",
        "|faint|p2a: Eevee",
        "|-weather|<none>",
        "|win|Ash",
    ]
    text = html.unescape(re.sub(r"<[^>]+>", "", text_log(lines, "p1")))
    assert text.splitlines() == [
        "Battle started between Ash and Gary!",
        "Ash sent out Pika!",
        "Gary sent out Eevee!",
        "Turn 1",
        "The opposing Eevee used Tackle!",
        "(Pika lost 40% of its health!)",
        "Pika used Thunderbolt!",
        "A critical hit!",
        "(The opposing Eevee lost 100% of its health!)",
        "The opposing Eevee fainted!",
        "-weather <none>",  # other lines: their fields, escaped
        "Ash won the battle!",
    ]


@pytest.mark.backends
@pytest.mark.integration
@pytest.mark.timeout(300)
def test_evaluate_save_replays_writes_complete_replays(tmp_path: Path) -> None:
    proc = run_python(
        [
            sys.executable,
            "-m",
            "trainer.evaluate",
            "checkpoint=models/attention_ppo_gen9random.pt",
            "opponents=[random]",
            "battles=1",
            "num_envs=1",
            "save_replays=true",
            f"hydra.run.dir={tmp_path}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    result = json.loads((tmp_path / "evaluation.json").read_text())["opponents"]["random"]
    replays = sorted((tmp_path / "replays" / "random").glob("battle-*.html"))
    assert replays
    page = replays[0].read_text(encoding="utf-8")
    lines, last_turn = check_replay(page)
    assert last_turn == result["mean_turns"]  # the one counted battle
    assert any(line.startswith("|win|") or line == "|tie" for line in lines)
    # the agent's choices, each with the policy's probability of it, for the offline viewer
    [extra] = re.findall(r'class="maple-replay-data">(.*?)</script>', page, re.DOTALL)
    decisions = json.loads(extra)["decisions"]
    assert len(decisions) >= last_turn
    assert all(d["choice"].startswith(("move ", "switch ")) for d in decisions)
    assert all(0.0 < d["probability"] <= 1.0 for d in decisions)
    assert [d["line"] for d in decisions] == sorted(d["line"] for d in decisions)
