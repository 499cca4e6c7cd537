"""Server text that broke the writers (issue 61): a relay in front of a real Showdown server
rewrites every HP to ``1e999/100`` and the agent's request conditions to ``"1x/277"``;
``python -m trainer.evaluate`` with replays and search on keeps its results, writes its
replays (or says in one warning which it could not) and answers every decision."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostile_servers import Relay
from warm_cli import run_python

ROOT = Path(__file__).resolve().parents[3]
CHECKPOINT = ROOT / "models" / "attention_ppo_gen9random.pt"
HP_FIELD = {"switch": 3, "drag": 3, "-damage": 2, "-heal": 2}  # after the leading ""


def _line(line: str) -> str:
    parts = line.split("|")
    if len(parts) < 3:
        return line
    kind = parts[1]
    at = HP_FIELD.get(kind)
    if at is not None and len(parts) > at + 1 and not parts[at + 1].startswith("0"):
        status = parts[at + 1].partition(" ")[2]
        parts[at + 1] = "1e999/100" + (f" {status}" if status else "")
        return "|".join(parts)
    if kind == "request" and parts[2].startswith("{"):
        request = json.loads("|".join(parts[2:]))
        for mon in (request.get("side") or {}).get("pokemon") or ():
            if not mon.get("condition", "").startswith("0"):
                mon["condition"] = "1x/277"
        return "|request|" + json.dumps(request)
    return line


def hostile_text(frame: str) -> str:
    """Every HP ``1e999/100``, every request condition ``"1x/277"`` (fainted ones kept)."""
    return "\n".join(_line(line) for line in frame.split("\n"))


@pytest.fixture
def relay(showdown_server) -> Iterator[Relay]:
    server = Relay(showdown_server.port, hostile_text)
    try:
        yield server
    finally:
        server.close()


def evaluate(tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess:
    return run_python(
        [
            sys.executable,
            "-m",
            "trainer.evaluate",
            f"checkpoint={CHECKPOINT}",
            "opponents=[random]",
            "battles=2",
            "num_envs=1",
            "max_turns=40",
            f"hydra.run.dir={tmp_path / 'run'}",
            *overrides,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=400,
    )


SEARCH = ["search.enabled=true", "search.time_ms=null", "search.sims=4", "search.worlds=1"]


@pytest.mark.integration
@pytest.mark.timeout(480)
@pytest.mark.parametrize("search", [True, False], ids=["search", "no_search"])
def test_hp_of_1e999_and_a_condition_of_1x_keep_the_evaluation(
    tmp_path: Path, relay: Relay, search: bool
) -> None:
    proc = evaluate(
        tmp_path,
        f"server_url=127.0.0.1:{relay.port}",
        "save_replays=true",
        *(SEARCH if search else []),
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert relay.rewritten > 10
    assert "Traceback" not in out and "OverflowError" not in out
    document = json.loads((tmp_path / "run" / "evaluation.json").read_text())
    result = document["opponents"]["random"]
    assert result["battles"] == 2 and result["quality"]["battles"] == 2, result
    replays = list((tmp_path / "run" / "replays").rglob("*.html"))
    assert len(replays) == 2, replays
    page = replays[0].read_text()
    assert "1e999\\/100" in page  # the log as the server sent it; the text has no inf%
    assert "inf%" not in page and "nan%" not in page
    # the view the searcher reads could not be built: one warning, the policy's picks
    warnings = [line for line in out.splitlines() if "search: cannot read" in line]
    assert len(warnings) == int(search), warnings
    assert not search or "HP '1x' is not a number" in warnings[0]


def test_the_text_log_reads_no_number_it_cannot_trust() -> None:
    from mapleenv.replays import text_log

    text = text_log(
        [
            "|player|p1|a|",
            "|switch|p1a: X|X, L50|1e999/100",
            "|-damage|p1a: X|nan/100",
            "|-heal|p1a: X|inf/0",
            "|-damage|p1a: X|50/100",
            "|-boost|p1a: X|atk|\u00b2",
            "|-boost|p1a: X|atk|" + "9" * 5000,
        ],
        "p1",
    )
    assert "inf" not in text.lower() and "nan" not in text.lower()
    assert "has 50% of its health" in text and text.count("Attack rose!") == 2


def test_play_quality_reads_no_number_it_cannot_trust() -> None:
    from trainer.evaluation.quality import battle_quality

    lines = ["|turn|\u00b2", "|turn|" + "9" * 5000, "|turn|\u0663", "|turn|7", "|turn|1e9"]
    assert battle_quality(lines, "p1")["turns"] == 7


CHAT = "|c|\u2606rival|spam \x1b[31m\r" + "x" * 1000
FORGED = "|maple-unknown|hello\r\x1b[2J\n[2026-01-01 00:00:00,000][trainer][INFO] - forged"


def chatty(frame: str) -> str | list[str]:
    """Every battle frame followed by 300 chat lines (~0.3 MB); the greeting by a frame
    poke-env cannot handle and logs, with a terminal escape and a forged record in it."""
    if frame.startswith(">battle"):
        return frame + "\n" + "\n".join([CHAT] * 300)
    if frame.startswith("|challstr|"):
        return [frame, FORGED]
    return frame


@pytest.fixture
def chat_relay(showdown_server) -> Iterator[Relay]:
    server = Relay(showdown_server.port, chatty)
    try:
        yield server
    finally:
        server.close()


@pytest.mark.integration
@pytest.mark.timeout(480)
def test_an_external_server_s_chat_is_not_kept_and_its_text_is_escaped(
    tmp_path: Path, chat_relay: Relay
) -> None:
    proc = evaluate(tmp_path, f"server_url=127.0.0.1:{chat_relay.port}", "save_replays=true")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert chat_relay.sent_bytes > 5 << 20
    replays = list((tmp_path / "run" / "replays").rglob("*.html"))
    assert len(replays) == 2 and all("spam" not in p.read_text() for p in replays)
    assert "\x1b" not in out and "\r" not in out  # printed escaped, if at all
    assert not any(line.startswith("[2026-01-01") for line in out.splitlines())
