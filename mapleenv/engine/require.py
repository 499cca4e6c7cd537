"""``require_engine()``: the poke-engine module for code that needs it, or one line that names
the install step. Importing this module never imports poke-engine."""

from __future__ import annotations

import importlib
import importlib.metadata
from functools import cache
from types import ModuleType

from mapleenv.engine.patches import has_edits

INSTALL_STEP = "run `make setup` in a Maple checkout, or `python -m mapleenv.engine.install`"


class EngineNotInstalledError(ImportError):
    """poke-engine is missing, or not the build Maple's search needs (gen 9, with its edits)."""


def require_engine(gen9: bool = True) -> ModuleType:
    """The ``poke_engine`` module; raises :class:`EngineNotInstalledError` (one line naming the
    install step) when it is not installed or (``gen9``) was built without terastallization
    or without Maple's edits to the MCTS (a seed and a root prior, ``mapleenv.engine.patches``)."""
    try:
        module = importlib.import_module("poke_engine")
    except ImportError as exc:
        raise EngineNotInstalledError(
            f"poke-engine is not installed ({exc}): {INSTALL_STEP}"
        ) from None
    if gen9 and not has_terastallization(module):
        raise EngineNotInstalledError(
            f"poke-engine {_version()} is installed without gen 9 (its terastallization "
            "feature): rebuild it with `python -m mapleenv.engine.install --force`"
        )
    if gen9 and not has_edits(module):
        raise EngineNotInstalledError(
            f"poke-engine {_version()} is installed without Maple's edits to its search: "
            "rebuild it with `python -m mapleenv.engine.install --force`"
        )
    return module


def engine_status() -> tuple[str | None, bool]:
    """``(installed version or None, built as Maple builds it: gen 9 with its edits)``, for
    the installer and for tests."""
    version = _version()
    if version is None:
        return None, False
    try:
        module = importlib.import_module("poke_engine")
    except ImportError:
        return None, False
    return version, has_terastallization(module) and has_edits(module)


@cache
def has_terastallization(module: ModuleType) -> bool:
    """Whether the build offers Tera moves: one MCTS iteration on a one-move state (~1 ms)
    lists ``tackle-tera`` beside ``tackle`` only in a gen 9 build."""
    try:
        mon = module.Pokemon(moves=[module.Move(id="tackle")], tera_type="fire")
        foe = module.Pokemon(moves=[module.Move(id="tackle")])
        state = module.State(
            side_one=module.Side(pokemon=[mon]), side_two=module.Side(pokemon=[foe])
        )
        result = module.mcts(state, 0, 1, 1)
        return any(str(side.move_choice).endswith("-tera") for side in result.s1)
    except Exception:  # an older or other build's API: not the build Maple needs
        return False


def _version() -> str | None:
    try:
        return importlib.metadata.version("poke-engine")
    except importlib.metadata.PackageNotFoundError:
        return None
