"""Direct-simulator env backend: battles run in a Node child, parsed by poke-env's Battle."""

from mapleenv.direct.host import SimHost, SimHostError
from mapleenv.direct.session import DirectBattle, order_to_choice

__all__ = ["DirectBattle", "SimHost", "SimHostError", "order_to_choice"]
