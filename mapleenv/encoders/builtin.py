"""Registers the built-in encoders that load Showdown's move data (``singles_entities``,
``singles_sets``, ``doubles_calc``, ``doubles_entities``) with
:func:`mapleenv.encoders.register_encoder`. :func:`mapleenv.encoders.make_encoder` imports this
module on the first name it does not know, so a run that uses ``singles_basic`` or
``doubles_basic`` never pays for that data. Layouts and scaling:
:mod:`mapleenv.encoders.features.layout` and ``docs/observation.md``.
"""

from __future__ import annotations

from mapleenv.encoders import register_encoder
from mapleenv.encoders.doubles.calc import DoublesCalcEncoder
from mapleenv.encoders.doubles.entities import DoublesEntitiesEncoder
from mapleenv.encoders.singles.entities import SinglesEntitiesEncoder
from mapleenv.encoders.singles.sets import SinglesSetsEncoder

register_encoder("singles_entities", SinglesEntitiesEncoder)
register_encoder("singles_sets", SinglesSetsEncoder)
register_encoder("doubles_calc", DoublesCalcEncoder)
register_encoder("doubles_entities", DoublesEntitiesEncoder)

__all__ = [
    "DoublesCalcEncoder",
    "DoublesEntitiesEncoder",
    "SinglesEntitiesEncoder",
    "SinglesSetsEncoder",
]
