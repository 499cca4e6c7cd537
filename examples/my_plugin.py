"""An example Maple plugin: a custom opponent, encoder and reward (docs/extending.md).

Importing it registers them; ``env.plugins=[my_plugin]`` imports it in the trainer and in
every env worker::

    PYTHONPATH=examples python -m trainer +experiment=smoke env.plugins=[my_plugin] \\
        env.opponent=first_move env.encoder=hp_turn env.reward_fn=turn_penalty
"""

from __future__ import annotations

from typing import Any

import numpy as np
from poke_env.battle.abstract_battle import AbstractBattle
from poke_env.player import BattleOrder, Player
from poke_env.ps_client import AccountConfiguration

from mapleenv.encoders import register_encoder
from mapleenv.opponents import register_opponent, unique_username
from mapleenv.reward import RewardConfig, RewardTracker, register_reward


# -- an opponent: env.opponent=first_move
class FirstMovePlayer(Player):
    """Always uses its active Pokémon's first available move; switches at random when it
    has none."""

    def choose_move(self, battle: AbstractBattle) -> BattleOrder:
        if battle.available_moves:
            return self.create_order(battle.available_moves[0])
        return self.choose_random_move(battle)


def first_move(
    argument: str, *, battle_format: str, seed: int | None = None, **kwargs: Any
) -> Player:
    """Opponent factory: ``argument`` is what follows ``first_move:`` in the name (unused).
    The env calls the player's ``choose_move`` itself, so it never connects."""
    return FirstMovePlayer(
        battle_format=battle_format,
        account_configuration=AccountConfiguration(unique_username("fm"), None),
        start_listening=False,
        **kwargs,
    )


register_opponent("first_move", first_move)


# -- an encoder: env.encoder=hp_turn
class HpTurnEncoder:
    """Three features: our active's HP fraction, the opponent active's, and turn / 100."""

    size = 3
    low = np.zeros(3, dtype=np.float32)
    high = np.ones(3, dtype=np.float32)

    def encode(self, battle: AbstractBattle) -> np.ndarray:
        me, them = battle.active_pokemon, battle.opponent_active_pokemon
        return np.array(
            [
                me.current_hp_fraction if me is not None else 0.0,
                them.current_hp_fraction if them is not None else 0.0,
                min(battle.turn / 100.0, 1.0),
            ],
            dtype=np.float32,
        )


register_encoder("hp_turn", HpTurnEncoder)


# -- a reward: env.reward_fn=turn_penalty
class TurnPenalty:
    """The shaped reward (with the env's weights, ``env.reward``) minus ``cost`` per turn
    played: a win found sooner is worth more."""

    def __init__(self, config: RewardConfig, cost: float = 0.01):
        self.shaped, self.cost, self.turn = RewardTracker(config), cost, 0

    def reset(self) -> None:
        self.shaped.reset()
        self.turn = 0

    def compute(self, battle: AbstractBattle) -> float:
        turns, self.turn = battle.turn - self.turn, battle.turn
        return self.shaped.compute(battle) - self.cost * turns


register_reward("turn_penalty", TurnPenalty)
