"""A requests-only opponent (``random``) plays exactly as with its full battle view.

The direct backend feeds the battle log only to the battles that read it
(``session.REQUESTS_ONLY_PLAYERS``). The reference is the old way: every side parses its
whole view (``REQUESTS_ONLY_PLAYERS`` emptied). For fixed seeds, real battles on the real
simulator must give the same choices of both sides, observations, masks, rewards and infos.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import DirectPokemonEnv
from poke_env.player.player import Player

from mapleenv.backends.direct import session as direct_session
from mapleenv.opponents import make_opponent

pytestmark = pytest.mark.integration

TEAMS = str(Path(__file__).resolve().parents[3] / "teams" / "gen9ou")


def _play(
    opponent: Player, battles: int, seed: int, **settings: Any
) -> tuple[list[Any], list[Any]]:
    """Every step's (observation, mask, reward, terminated, truncated, info) and every
    battle's input log (both sides' choices), rejected choices and its opponent battle's
    turn."""
    random.seed(seed)  # the random opponent draws from Python's random
    rng = np.random.default_rng(seed)
    env = DirectPokemonEnv(
        opponent=opponent, seed=seed, backend_kwargs={"record": True}, **settings
    )
    steps: list[Any] = []
    logs: list[Any] = []
    try:
        for _ in range(battles):
            obs, info = env.reset()
            steps.append((obs["observation"].tolist(), obs["action_mask"].tolist(), info))
            done = False
            while not done:
                action = rng.choice(np.flatnonzero(obs["action_mask"]))
                obs, reward, term, trunc, info = env.step(action)
                done = term or trunc
                steps.append(
                    (
                        obs["observation"].tolist(),
                        obs["action_mask"].tolist(),
                        reward,
                        term,
                        trunc,
                        info,
                    )
                )
            session = env._backend.session
            logs.append(
                (list(session.input_log), session.invalid_choices, session.opponent_battle.turn)
            )
    finally:
        env.close()
    return steps, logs


@pytest.mark.parametrize(
    ("settings", "battles"),
    [
        ({"battle_format": "gen9randombattle"}, 12),
        ({"battle_format": "gen8randombattle"}, 4),  # dynamax: the log marks it, not the request
        ({"battle_format": "gen9ou", "team": TEAMS}, 3),  # team preview
    ],
    ids=["gen9random", "gen8random", "gen9ou-teampreview"],
)
def test_random_opponent_plays_the_same_without_the_battle_log(
    monkeypatch: pytest.MonkeyPatch, settings: dict[str, Any], battles: int
) -> None:
    opponent = make_opponent("random", settings["battle_format"])  # one name for both runs
    fast_steps, fast_logs = _play(opponent, battles, 21, **settings)
    monkeypatch.setattr(direct_session, "REQUESTS_ONLY_PLAYERS", frozenset())
    full_steps, full_logs = _play(opponent, battles, 21, **settings)

    assert len(fast_steps) > 20 * battles
    assert fast_steps == full_steps
    assert [log[:2] for log in fast_logs] == [log[:2] for log in full_logs]
    # the fast path was taken: the opponent's battle saw no |turn| line, the reference's did
    assert all(turn == 0 for *_, turn in fast_logs)
    assert all(turn > 0 for *_, turn in full_logs)
