"""Package faces imported on first use (PEP 562): a package names what it offers and the
module each name lives in; importing the package stays cheap (no torch, no poke-env event
loop, no import cycle), and a name's module is imported when the name is first asked for."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``package``: ``name`` comes from the module
    ``homes[name]`` (a full module name); any other name is an ``AttributeError``."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(home), name)

    return __getattr__
