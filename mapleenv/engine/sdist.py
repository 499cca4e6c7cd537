"""poke-engine's source package: fetched once (checked against its pinned digest), unpacked
with Maple's source changes (``patches``: a seed for the MCTS, quiet panics), and patched to
build offline against Debian's crate sources."""

from __future__ import annotations

import hashlib
import re
import shutil
import tarfile
import urllib.request
from pathlib import Path

from mapleenv.engine import patches
from mapleenv.engine.pins import ENGINE_VERSION, SDIST_NAME, SDIST_SHA256, SDIST_URL

# The two requirements newer than Debian's crates, widened to take them (the crate compiles
# against them unchanged, and its own tests pass): (file, pattern, replacement)
WIDENINGS = (
    ("Cargo.toml", r'^rand = "0\.9(\.\d+)?"', 'rand = ">=0.9.3, <0.11"'),
    (
        "poke-engine-py/Cargo.toml",
        r'^pyo3 = \{ version = "0\.29(\.\d+)?"',
        'pyo3 = { version = ">=0.28, <0.30"',
    ),
)


class SdistError(RuntimeError):
    """The source package could not be fetched or patched: one line."""


def fetch(cache: Path) -> Path:
    """The sdist under ``cache/sdist``, downloaded from PyPI when missing or corrupt."""
    path = cache / "sdist" / SDIST_NAME
    if path.is_file() and _sha256(path) == SDIST_SHA256:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".part")
    try:
        with urllib.request.urlopen(SDIST_URL, timeout=60) as response, partial.open("wb") as out:
            shutil.copyfileobj(response, out)
    except OSError as exc:
        raise SdistError(f"could not download {SDIST_URL}: {exc}") from None
    if _sha256(partial) != SDIST_SHA256:
        raise SdistError(f"{SDIST_URL} does not match its pinned sha256 {SDIST_SHA256}")
    partial.replace(path)
    return path


def unpack_source(sdist: Path, into: Path) -> Path:
    """The sdist unpacked fresh into ``into``, with Maple's source changes; its folder."""
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    with tarfile.open(sdist) as tar:
        tar.extractall(into, filter="data")
    src = into / f"poke_engine-{ENGINE_VERSION}"
    try:
        patches.apply(src)
    except (OSError, patches.PatchError) as exc:
        raise SdistError(f"cannot apply Maple's changes to poke-engine's source: {exc}") from None
    return src


def unpack_offline(sdist: Path, into: Path, registry: Path) -> Path:
    """:func:`unpack_source`, then its two requirements widened, its Cargo.lock removed (cargo
    resolves against the local crates) and a ``.cargo/config.toml`` that replaces the crate
    registry with ``registry`` and keeps cargo offline."""
    src = unpack_source(sdist, into)
    for name, pattern, replacement in WIDENINGS:
        manifest = src / name
        text, count = re.subn(pattern, replacement, manifest.read_text(), count=1, flags=re.M)
        if count != 1:
            raise SdistError(f"{name} of poke-engine {ENGINE_VERSION}: no line matches {pattern}")
        manifest.write_text(text)
    (src / "Cargo.lock").unlink(missing_ok=True)
    (src / ".cargo").mkdir(exist_ok=True)
    (src / ".cargo" / "config.toml").write_text(
        '[source.crates-io]\nreplace-with = "debian"\n\n'
        f'[source.debian]\ndirectory = "{registry}"\n\n[net]\noffline = true\n'
    )
    return src


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
