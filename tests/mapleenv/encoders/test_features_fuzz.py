"""Fuzz the rich encoders over real random battles on a real Showdown server.

Two poke-env ``RandomPlayer``s battle each other; every state either of them has to
decide on is encoded and checked: no exception, float32 of the right size, finite, within
the encoder's ``low``/``high`` bounds. The encoder is ``singles_sets``, which runs
``singles_entities`` for its first 1453 features and then the futile-move and random-battle-set
blocks.
"""

from __future__ import annotations

import asyncio
import traceback

import numpy as np
import pytest
from poke_env.battle import AbstractBattle
from poke_env.player import RandomPlayer
from poke_env.player.battle_order import BattleOrder

from mapleenv.encoders.features import layout
from mapleenv.encoders.singles.sets import SinglesSetsEncoder

BATTLES = 20


class EncodingRandomPlayer(RandomPlayer):
    """A ``RandomPlayer`` that encodes (and checks) every state it decides on."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.encoder = SinglesSetsEncoder()
        self.states = 0
        self.problems: list[str] = []

    def choose_move(self, battle: AbstractBattle) -> BattleOrder:
        try:
            vec = self.encoder.encode(battle)
            self.states += 1
            if vec.dtype != np.float32 or vec.shape != (self.encoder.size,):
                self.problems.append(f"{battle.battle_tag}: {vec.dtype} {vec.shape}")
            bad = np.nonzero(
                ~np.isfinite(vec) | (vec < self.encoder.low) | (vec > self.encoder.high)
            )[0]
            if len(bad):
                names = layout.SINGLES_SETS.feature_names()
                self.problems.append(
                    f"{battle.battle_tag} turn {battle.turn}: "
                    f"{[(names[i], float(vec[i])) for i in bad]}"
                )
        except Exception:  # noqa: BLE001 - reported by the test, the battle goes on
            self.problems.append(
                f"{battle.battle_tag} turn {battle.turn}: {traceback.format_exc()}"
            )
        return super().choose_move(battle)


@pytest.mark.integration
@pytest.mark.timeout(400)
def test_random_battles_encode_without_errors_within_bounds(showdown_server) -> None:
    players = [
        EncodingRandomPlayer(
            battle_format="gen9randombattle",
            server_configuration=showdown_server.server_configuration,
            max_concurrent_battles=4,
        )
        for _ in range(2)
    ]

    async def play() -> None:
        try:
            await asyncio.wait_for(
                players[0].battle_against(players[1], n_battles=BATTLES), timeout=300
            )
        finally:
            for p in players:
                await p.ps_client.stop_listening()

    asyncio.run(play())
    assert players[0].n_finished_battles == BATTLES
    assert [p for player in players for p in player.problems] == []
    states = sum(p.states for p in players)
    assert states >= 2 * BATTLES * 10  # random battles last well over 10 decisions
    calls = sum(p.encoder.damage.calls for p in players)
    failures = sum(p.encoder.damage.failures for p in players)
    assert calls > states / 2  # the damage calculator really ran
    assert failures <= 0.01 * calls
