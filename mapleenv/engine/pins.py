"""What Maple builds of poke-engine: the version, its source package on PyPI, the Cargo
features of the generation, and where built wheels are kept (one build per machine)."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

ENGINE_VERSION = "0.0.48"
SDIST_NAME = f"poke_engine-{ENGINE_VERSION}.tar.gz"
SDIST_URL = (
    "https://files.pythonhosted.org/packages/cf/69/"
    "47d572f526943c519927acff95685bffa1aba7024f8433bc1924d7941ae2/" + SDIST_NAME
)
SDIST_SHA256 = "070010686f2aedff11e25137e696e301ccd80fd57c805d255464067fc905ca12"
# The generation is a Cargo feature of the bindings crate: gen 9 (random battles) is
# terastallization, without the bindings' default gen 4
GEN9_FEATURES = ("--features", "poke-engine/terastallization", "--no-default-features")
# gen 9 with Maple's source changes (patches.py); the number moves when they change, so a
# wheel built without them is not taken from the cache
FEATURES_KEY = "gen9-maple2"
# How maturin's PEP 517 backend takes build arguments (pip and `pip wheel` pass the env on)
MATURIN_ARGS_ENV = "MATURIN_PEP517_ARGS"


def cache_dir() -> Path:
    """The machine's build cache: ``$MAPLE_ENGINE_CACHE``, else
    ``$XDG_CACHE_HOME/maple/engine-build``, else ``~/.cache/maple/engine-build``; shared by
    every checkout and venv of the user, so a fresh clone reuses the wheel."""
    if os.environ.get("MAPLE_ENGINE_CACHE"):
        return Path(os.environ["MAPLE_ENGINE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "maple" / "engine-build"


def wheel_key() -> str:
    """The wheel cache's key: engine version, features, interpreter and machine (a wheel fits
    only the Python it was built for)."""
    return f"{ENGINE_VERSION}-{FEATURES_KEY}-{sys.implementation.cache_tag}-{platform.machine()}"


def wheel_dir(cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / "wheels" / wheel_key()


def cached_wheel(cache: Path | None = None) -> Path | None:
    """The built wheel for this interpreter, or None."""
    folder = wheel_dir(cache)
    wheels = sorted(folder.glob(f"poke_engine-{ENGINE_VERSION}-*.whl")) if folder.is_dir() else []
    return wheels[-1] if wheels else None
