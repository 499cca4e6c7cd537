"""poke-engine, the native (Rust) battle engine that engine search runs on: how it is
installed (``python -m mapleenv.engine.install``, run by ``make setup``) and how code that
needs it asks for it (:func:`require_engine`, one line naming the install step when missing).

PyPI has poke-engine only as a source package whose generation is a compile-time feature;
this package builds the gen 9 wheel once per machine (docs/architecture.md, "The engine").
"""

from mapleenv.engine.pins import ENGINE_VERSION, GEN9_FEATURES
from mapleenv.engine.require import (
    INSTALL_STEP,
    EngineNotInstalledError,
    engine_status,
    require_engine,
)

__all__ = [
    "ENGINE_VERSION",
    "GEN9_FEATURES",
    "INSTALL_STEP",
    "EngineNotInstalledError",
    "engine_status",
    "require_engine",
]
