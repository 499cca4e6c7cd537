"""``SinglesSetsEncoder`` (encoder ``singles_sets``): the ``singles_entities`` observation,
unchanged, followed by the futile-move flags of our moves and what the opponents' random-battle
sets still allow.

Layout :data:`mapleenv.encoders.features.layout.SINGLES_SETS` (docs/observation.md).
``singles_entities`` itself stays as it was: agents trained on it load unchanged.
"""

from __future__ import annotations

import logging

import numpy as np
from poke_env.battle import AbstractBattle, Battle

from mapleenv.actions import move_slots
from mapleenv.encoders.features import layout
from mapleenv.encoders.features.futility import Futility, move_futility
from mapleenv.encoders.features.random_sets import set_summary
from mapleenv.encoders.singles.entities import SinglesEntitiesEncoder

logger = logging.getLogger(__name__)

LAYOUT = layout.SINGLES_SETS
_FUTILITY = LAYOUT.block("move_futility")
_SETS = LAYOUT.block("opponent_sets")


class SinglesSetsEncoder(SinglesEntitiesEncoder):
    """Encode a singles battle into :data:`layout.SINGLES_SETS` floats (``singles_entities`` + new
    blocks)."""

    def __init__(self, threat_calcs: int = 3, cache_entries: int = 100_000) -> None:
        super().__init__(threat_calcs, cache_entries)
        self.size = LAYOUT.size
        self.low, self.high = LAYOUT.bounds()

    def __repr__(self) -> str:
        return f"SinglesSetsEncoder(size={self.size})"

    def encode(self, battle: AbstractBattle) -> np.ndarray:
        """The observation vector of ``battle`` (float32, shape ``(size,)``)."""
        out = super().encode(battle)  # allocates self.size floats, fills the rich prefix
        assert isinstance(battle, Battle)
        gen = battle.gen
        base, width = LAYOUT.offsets["opponent_sets"], _SETS.width
        opp_active = battle.opponent_active_pokemon
        active_abilities: tuple[str, ...] = ()
        for i, mon in enumerate(list(battle.opponent_team.values())[: layout.TEAM_SIZE]):
            vector, abilities = set_summary(gen, mon)
            out[base + i * width : base + (i + 1) * width] = vector
            if mon is opp_active:
                active_abilities = abilities
        base, width = LAYOUT.offsets["move_futility"], _FUTILITY.width
        if battle.active_pokemon is None:
            return out
        for slot, m in enumerate(move_slots(battle)[: layout.MOVE_SLOTS]):
            try:
                flags = move_futility(battle, m, active_abilities or None)
            except (KeyError, ValueError) as exc:  # a move poke-env has no data for
                logger.debug("no futility for %s: %s", m.id, exc)
                flags = Futility()
            out[base + slot * width : base + (slot + 1) * width] = flags.vector()
        return out
