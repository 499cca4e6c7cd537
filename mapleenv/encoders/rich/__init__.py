"""The rich battle encoder (``encoder="rich"``).

Importing this package registers :class:`RichEncoder` under the name ``"rich"`` with
:func:`mapleenv.encoders.register_encoder`; ``mapleenv.encoders.make_encoder("rich")``
imports it on demand. Layout and scaling: :mod:`mapleenv.encoders.rich.layout` and
``docs/observation.md``.
"""

from __future__ import annotations

from mapleenv.encoders import register_encoder
from mapleenv.encoders.rich.encoder import RichEncoder
from mapleenv.encoders.rich.layout import LAYOUT, SIZE

register_encoder("rich", RichEncoder)

__all__ = ["LAYOUT", "SIZE", "RichEncoder"]
