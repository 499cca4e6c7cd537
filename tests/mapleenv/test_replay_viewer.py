"""The offline replay viewer (``mapleenv/js/replay_view.js``, inlined into every replay):
a replay written by a real battle renders turn by turn in headless Chromium with the
network cut off."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import numpy as np
import pytest
from conftest import RECORDED_BATTLES, DirectPokemonEnv, replay_decisions
from test_hostile_inputs import HOSTILE, hostile_battle

from mapleenv.replays import OFFLINE_VIEWER, decision, offline_viewer, replay_html

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
EXTRA = re.compile(
    r'<script type="application/json" class="maple-replay-data">(.*?)</script>', re.DOTALL
)
# no DNS and a proxy that refuses: the page must render without any network
OFFLINE_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=http://127.0.0.1:9",
    "--no-first-run",
    "--disable-background-networking",
]


def test_the_viewer_is_inlined_and_shipped_as_package_data() -> None:
    _, battle = replay_decisions(RECORDED_BATTLES[0], lambda b: None)
    picks = [decision(battle, "move </script><!--x", 0.25), decision(battle, "switch 2")]
    page = replay_html(battle, picks)
    script = offline_viewer()
    assert f"<script>\n{script}</script>" in page
    # the inlined code cannot end its own block or open an HTML comment
    assert "</script" not in script.lower() and "<!--" not in script
    [block] = EXTRA.findall(page)
    extra = json.loads(block)
    assert "<" not in block and extra["decisions"] == picks
    assert extra["side"] == battle.player_role and len(extra["team"]) == len(battle.team) == 6
    assert picks[0]["line"] == len(battle._replay_data) and picks[0]["probability"] == 0.25
    assert "probability" not in picks[1]
    # a wheel carries it: pyproject's package data for mapleenv matches the file
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["mapleenv"]
    relative = OFFLINE_VIEWER.relative_to(ROOT / "mapleenv").as_posix()
    assert any(fnmatch(relative, pattern) for pattern in patterns)


NEEDS_CHROMIUM = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"
)


def _chromium(page: Path, profile: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [CHROMIUM, *OFFLINE_FLAGS, f"--user-data-dir={profile}", *flags, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _play_one_battle(replay_dir: Path) -> tuple[object, int]:
    """A real battle on the direct backend (random legal picks); its battle and steps."""
    env = DirectPokemonEnv(opponent="random", seed=3, replay_dir=str(replay_dir))
    try:
        obs, _ = env.reset()
        rng, steps = np.random.default_rng(3), 0
        while True:
            obs, _, terminated, truncated, _ = env.step(
                int(rng.choice(np.flatnonzero(obs["action_mask"])))
            )
            steps += 1
            if terminated or truncated:
                return env.battle, steps
    finally:
        env.close()


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


@pytest.mark.integration
@pytest.mark.timeout(300)
@NEEDS_CHROMIUM
def test_a_real_replay_renders_offline_in_headless_chromium(tmp_path: Path) -> None:
    battle, steps = _play_one_battle(tmp_path / "replays")
    [page] = (tmp_path / "replays").glob("*.html")
    dom = _chromium(page, tmp_path / "profile", "--dump-dom").stdout
    [view] = re.findall(r'<div id="maple-replay".*?(?=<script type="application/json")', dom, re.S)
    headings = [_text(h) for h in re.findall(r"<h2>(.*?)</h2>", view)]
    turns = [int(m.group(1)) for h in headings if (m := re.match(r"Turn (\d+)", h))]
    assert headings[0].startswith("Start") and turns == list(range(1, battle.turn + 1))
    text = _text(view)
    for key in battle.team:  # the agent's whole team, sent out or not
        assert key.partition(": ")[2] in text
    assert "won the battle!" in text or "ended in a tie" in text
    assert text.count("Agent chose ") == steps  # every recorded choice, at its place
    # HP bars: one per Pokémon per turn, their widths the percentages shown beside them
    bars = re.findall(
        r'mr-fill mr-\w+" style="width: (\d+)%;"></div></div><span class="mr-pct">'
        r"(\d+%|fainted)",
        view,
    )
    assert len(bars) >= 2 * (battle.turn + 1)
    assert all(pct == f"{width}%" or (pct == "fainted" and width == "0") for width, pct in bars)
    assert any(pct == "fainted" for _, pct in bars)
    shot = tmp_path / "replay.png"
    _chromium(page, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1200,900")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"offline replay screenshot: {shot}")


@pytest.mark.integration
@pytest.mark.timeout(120)
@NEEDS_CHROMIUM
def test_a_hostile_nickname_renders_as_text_in_the_viewer(tmp_path: Path) -> None:
    page = tmp_path / "hostile.html"
    picks = [decision(hostile_battle(), f"move {HOSTILE}", 0.5)]
    page.write_text(replay_html(hostile_battle(), picks), encoding="utf-8")
    dom = _chromium(page, tmp_path / "profile", "--dump-dom").stdout
    [view] = re.findall(r'<div id="maple-replay".*?(?=<script type="application/json")', dom, re.S)
    assert "<b " not in view and "<script" not in view  # no element from the nickname
    assert _text(view).count(HOSTILE) >= 4  # its name on the team, events and choice
    assert f"Agent chose move {HOSTILE} (p = 0.50)" in _text(view)
