"""The rich battle encoder (``encoder="rich"``).

Importing this package registers :class:`RichEncoder` under the name ``"rich"`` and
:class:`Rich2Encoder` (``rich`` + futile-move and random-battle-set features) under
``"rich2"``, and :class:`Doubles2Encoder` (``doubles`` + stats, speed, damage estimates and
matchups) under ``"doubles2"`` and :class:`Doubles3Encoder` (``doubles2`` + per-Pokémon and
per-move entity blocks) under ``"doubles3"`` with :func:`mapleenv.encoders.register_encoder`;
``mapleenv.encoders.make_encoder("rich")`` imports it on demand. Layout and scaling:
:mod:`mapleenv.encoders.rich.layout` and ``docs/observation.md``.
"""

from __future__ import annotations

from mapleenv.encoders import register_encoder
from mapleenv.encoders.rich.doubles2 import Doubles2Encoder
from mapleenv.encoders.rich.doubles3 import Doubles3Encoder
from mapleenv.encoders.rich.encoder import RichEncoder
from mapleenv.encoders.rich.layout import LAYOUT, SIZE
from mapleenv.encoders.rich.rich2 import Rich2Encoder

register_encoder("rich", RichEncoder)
register_encoder("rich2", Rich2Encoder)
register_encoder("doubles2", Doubles2Encoder)
register_encoder("doubles3", Doubles3Encoder)

__all__ = ["LAYOUT", "SIZE", "Doubles2Encoder", "Doubles3Encoder", "Rich2Encoder", "RichEncoder"]
