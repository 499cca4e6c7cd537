"""The rich battle encoder (``encoder="rich"``).

Importing this package registers :class:`RichEncoder` under the name ``"rich"`` with
:func:`mapleenv.encoding.register_encoder`; ``mapleenv.encoding.make_encoder("rich")``
imports it on demand. Layout and scaling: :mod:`mapleenv.features.layout` and
``docs/observation.md``.
"""

from __future__ import annotations

from mapleenv.encoding import register_encoder
from mapleenv.features.encoder import RichEncoder
from mapleenv.features.layout import LAYOUT, SIZE

register_encoder("rich", RichEncoder)

__all__ = ["LAYOUT", "SIZE", "RichEncoder"]
