"""The engine for engine tests: skipped with the reason where `make setup` could not build it,
failed instead where ``MAPLE_REQUIRE_ENGINE=1`` (CI, which must run them)."""

from __future__ import annotations

import os
from types import ModuleType

import pytest

from mapleenv.engine import EngineNotInstalledError, require_engine


def engine_or_skip() -> ModuleType:
    try:
        return require_engine()
    except EngineNotInstalledError as exc:
        if os.environ.get("MAPLE_REQUIRE_ENGINE") == "1":
            pytest.fail(str(exc))
        pytest.skip(str(exc))
