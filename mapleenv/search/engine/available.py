"""Whether the native engine (poke-engine, gen 9 build) is installed, with the one-line
error that names the install step when it is not."""

from __future__ import annotations

import importlib
from types import ModuleType

INSTALL_STEP = "EXTRAS=engine make setup (or: pip install -e '.[engine]')"


class EngineMissing(ValueError):
    """search.engine=poke-engine was asked for but poke_engine cannot be imported (a
    ValueError: the CLIs report it as bad input, one line and exit code 2)."""


def require_engine() -> ModuleType:
    """The ``poke_engine`` module, or :class:`EngineMissing` naming the install step."""
    try:
        return importlib.import_module("poke_engine")
    except ImportError as exc:
        raise EngineMissing(
            f"search.engine=poke-engine needs the poke-engine package ({exc}); install it: "
            + INSTALL_STEP
        ) from None
