"""VGC (``gen9vgc2025regi``, bring 6 pick 4) with the sample team folder ``teams/gen9vgc2025regi``:
the teams are legal for the simulator's validator, and doubles battles with them play to
the end on both backends with random legal joint actions, no choice refused, each side
bringing four of its six."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

import mapleenv
from mapleenv import PokemonEnv
from mapleenv.showdown.teams import load_teams

pytestmark = pytest.mark.integration

FORMAT = "gen9vgc2025regi"
TEAMS = Path(__file__).resolve().parents[2] / "teams" / FORMAT


def test_the_sample_vgc_teams_are_legal_and_six_each() -> None:
    files = sorted(p.name for p in TEAMS.iterdir())
    assert files == ["calyrex_shadow.txt", "koraidon.txt", "miraidon.txt"]
    teams = load_teams(TEAMS, FORMAT)  # the simulator's validator: ValueError if illegal
    assert len(teams) == 3 and all(team.packed.count("]") == 5 for team in teams)  # six Pokémon


def _refusals(records: list[logging.LogRecord]) -> list[str]:
    return [
        r.getMessage()
        for r in records
        if "Invalid choice" in r.getMessage() or "sending default" in r.getMessage()
    ]


@pytest.mark.parametrize("backend", ["direct", "server"])
def test_vgc_battles_with_the_team_folder_end_on_both_backends(backend: str, caplog) -> None:
    caplog.set_level(logging.INFO)
    env = PokemonEnv(FORMAT, "random", encoder="doubles", team=str(TEAMS), backend=backend, seed=4)
    rng = np.random.default_rng(4)
    try:
        for _ in range(3):
            obs, info = env.reset()
            assert f"-{FORMAT}-" in info["battle_tag"]
            for _ in range(500):
                action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
                obs, _, terminated, truncated, info = env.step(action)
                assert "illegal_action" not in info
                if terminated or truncated:
                    break
            assert terminated and env.battle.finished and info["turns"] > 0
            battle = env.battle
            team = list(battle.team.values())
            assert len(team) == 6  # "/team 123456": the first four of the file are brought
            assert any(mon.revealed for mon in team[:4])
            assert not any(mon.revealed for mon in team[4:])
            assert 1 <= len(battle.opponent_team) <= 4  # the opponent brought four of six
            if backend == "direct":
                assert env._backend.session.invalid_choices == {"p1": 0, "p2": 0}
    finally:
        env.close()
    assert _refusals(caplog.records) == []


def test_parallel_env_plays_vgc_with_the_team_folder_on_both_seats() -> None:
    env = mapleenv.parallel_env(
        battle_format=FORMAT, encoder="doubles", team=str(TEAMS), seed=6, on_illegal="raise"
    )
    rng = np.random.default_rng(6)
    try:
        obs, infos = env.reset()
        while env.agents:
            session = env._session
            actions = {
                a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents
            }
            obs, _, terms, _, infos = env.step(actions)
        assert terms == {"p1": True, "p2": True} and infos["p1"]["turns"] > 0
        assert session.invalid_choices == {"p1": 0, "p2": 0}
        assert all(len(env.battles[s].opponent_team) <= 4 for s in ("p1", "p2"))
    finally:
        env.close()
