"""play.log keeps Maple's own line for every battle asked for while the flood guard still
cuts what a server sends (a 200-battle accept run once logged 108 of its 200 results)."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from trainer.apps.guard import FloodGuard
from trainer.apps.live import BattleResult
from trainer.apps.play import _result_logger

BATTLES = 200


def test_every_result_line_is_logged_and_server_text_is_still_guarded(tmp_path: Path) -> None:
    log_file = tmp_path / "play.log"
    handler = logging.FileHandler(log_file)  # as Hydra's file handler for trainer.play
    handler.setFormatter(logging.Formatter("[%(name)s][%(levelname)s] - %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    previous_level = root.level
    root.setLevel(logging.INFO)
    server = logging.getLogger("maple-play-log-test")  # poke-env's logger for the player
    guard = FloodGuard()
    guard.install([server])
    results: list[BattleResult] = []
    on_result = _result_logger(results, BATTLES)
    try:
        for i in range(BATTLES + 10):  # 10 more than asked for: only a server causes those
            server.warning("Popup message received: |popup|spam %d", i)
            on_result(BattleResult(f"battle-gen9randombattle-{i}", "won", 3, "fastbot"))
    finally:
        guard.remove()
        root.removeHandler(handler)
        root.setLevel(previous_level)
        handler.close()
    lines = log_file.read_text().splitlines()
    numbers = [int(m[1]) for line in lines if (m := re.search(r" - battle (\d+)/200 ", line))]
    assert numbers[:BATTLES] == list(range(1, BATTLES + 1))  # every battle asked for
    assert numbers[BATTLES:] == list(range(BATTLES + 1, BATTLES + 6))  # then the burst of 5
    assert sum("|popup|spam" in line for line in lines) == 5
    assert sorted(guard.pending()) == [
        "205 more log records like 'Popup message received: |popup|spam %d' "
        "(maple-play-log-test) were dropped",
        "5 more log records like 'battle %d/%d %s: %s in %d turns vs %s' (trainer.play) "
        "were dropped",
    ]
