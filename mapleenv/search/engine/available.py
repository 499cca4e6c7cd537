"""Whether the native engine (poke-engine, gen 9 build) is installed, as the search's
bad-input error: :func:`mapleenv.engine.require_engine`'s one line, naming the install step."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from mapleenv.engine import EngineNotInstalledError
from mapleenv.engine import require_engine as _require


class EngineMissing(ValueError):
    """search.engine=poke-engine was asked for but poke_engine cannot be imported (a
    ValueError: the CLIs report it as bad input, one line and exit code 2)."""


def require_engine() -> ModuleType:
    """The ``poke_engine`` module, or :class:`EngineMissing` naming the install step."""
    try:
        return _require()
    except EngineNotInstalledError as exc:
        raise EngineMissing(f"search.engine=poke-engine: {exc}") from None


def require_engine_for(search: Any) -> None:
    """:func:`require_engine` where ``search`` (a :class:`~mapleenv.search.SearchConfig`, or
    the ``search.*`` settings with ``enabled``) asks for the native engine: one line at
    start, before any battle or env worker."""
    if getattr(search, "enabled", True) and search.engine == "poke-engine":
        require_engine()
