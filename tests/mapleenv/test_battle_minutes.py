"""A server that sends its turns slowly cannot hold an env for hours (issue 61): a battle
lasting ``battle_minutes`` is truncated as at ``max_turns`` (lost, one warning), and the
next ``reset`` forfeits it and starts another. A relay in front of a real Showdown server
holds back every request frame."""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hostile_servers import Relay
from warm_cli import run_python

from mapleenv.env import PokemonEnv
from mapleenv.spec import EnvSpec


def test_battle_minutes_must_be_positive() -> None:
    with pytest.raises(ValueError, match="battle_minutes must be > 0 or None, got 0"):
        EnvSpec(battle_minutes=0)
    assert EnvSpec(battle_minutes=None).battle_minutes is None


def _play_until_done(env: PokemonEnv, deadline_s: float) -> tuple[bool, bool, dict]:
    rng = np.random.default_rng(0)
    obs, _ = env.reset()
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        legal = np.flatnonzero(obs["action_mask"])
        obs, _, terminated, truncated, info = env.step(int(rng.choice(legal)))
        if terminated or truncated:
            return terminated, truncated, info
    raise AssertionError(f"no episode end within {deadline_s} s")


@pytest.mark.integration
def test_a_slow_servers_battle_is_truncated_at_battle_minutes(
    showdown_server, caplog: pytest.LogCaptureFixture
) -> None:
    relay = Relay(showdown_server.port, lambda frame: frame, delay_s=0.25)
    env = PokemonEnv(
        "gen9randombattle",
        opponent="random",
        server=f"127.0.0.1:{relay.port}",
        backend="server",
        battle_minutes=0.02,  # 1.2 s: a few of the relay's slowed turns
        seed=1,
    )
    try:
        with caplog.at_level(logging.WARNING, logger="mapleenv"):
            terminated, truncated, info = _play_until_done(env, deadline_s=120)
        assert (terminated, truncated) == (False, True)
        assert info["won"] is False and info["turns"] < 20
        warned = [r.getMessage() for r in caplog.records if "battle_minutes" in r.getMessage()]
        assert len(warned) == 1 and "still going after 0.02 min" in warned[0]
        obs, info = env.reset()  # forfeits the truncated battle, starts the next
        assert info["battle_tag"] and obs["action_mask"].any()
    finally:
        env.close()
        relay.close()


@pytest.mark.integration
@pytest.mark.timeout(400)
def test_evaluate_counts_a_slow_servers_battle_lost(showdown_server, tmp_path) -> None:
    """``python -m trainer.evaluate battle_minutes=...`` against the slow server: the battle
    is truncated, counted lost (not replayed as aborted) and the results are written."""
    root = Path(__file__).resolve().parents[2]
    relay = Relay(showdown_server.port, lambda frame: frame, delay_s=0.25)
    try:
        proc = run_python(
            [
                sys.executable,
                "-m",
                "trainer.evaluate",
                f"checkpoint={root / 'models' / 'attention_ppo_gen9random.pt'}",
                "opponents=[random]",
                "battles=1",
                "num_envs=1",
                "battle_minutes=0.02",
                f"server_url=127.0.0.1:{relay.port}",
                f"hydra.run.dir={tmp_path / 'run'}",
            ],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=360,
        )
    finally:
        relay.close()
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "still going after 0.02 min (battle_minutes)" in out
    result = json.loads((tmp_path / "run" / "evaluation.json").read_text())["opponents"]["random"]
    assert (result["battles"], result["wins"]) == (1, 0), result
