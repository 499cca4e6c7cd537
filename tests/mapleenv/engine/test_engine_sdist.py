"""mapleenv.engine.sdist: the source package patched to build against Debian's crates (a
small tarball shaped as poke-engine's sdist stands in for the download)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from mapleenv.engine.pins import ENGINE_VERSION
from mapleenv.engine.sdist import SdistError, unpack_patched

ROOT_TOML = '[dependencies]\ndashmap = "6.1.0"\nrand = "0.9.3"\n'
PY_TOML = '[dependencies]\npyo3 = { version = "0.29.0", features = ["extension-module"] }\n'


def _sdist(tmp_path: Path, root_toml: str = ROOT_TOML) -> Path:
    path = tmp_path / "sdist.tar.gz"
    top = f"poke_engine-{ENGINE_VERSION}"
    with tarfile.open(path, "w:gz") as tar:
        for name, text in {
            "Cargo.toml": root_toml,
            "poke-engine-py/Cargo.toml": PY_TOML,
            "Cargo.lock": "# pinned to crates.io\n",
        }.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_requirements_widened_lock_removed_registry_replaced(tmp_path: Path) -> None:
    registry = tmp_path / "crates" / "usr/share/cargo/registry"
    src = unpack_patched(_sdist(tmp_path), tmp_path / "src", registry)
    assert 'rand = ">=0.9.3, <0.11"' in (src / "Cargo.toml").read_text()
    assert 'dashmap = "6.1.0"' in (src / "Cargo.toml").read_text()
    py = (src / "poke-engine-py" / "Cargo.toml").read_text()
    assert 'pyo3 = { version = ">=0.28, <0.30", features = ["extension-module"] }' in py
    assert not (src / "Cargo.lock").exists()
    config = (src / ".cargo" / "config.toml").read_text()
    assert 'replace-with = "debian"' in config and f'directory = "{registry}"' in config
    assert "offline = true" in config


def test_unpacking_again_starts_fresh(tmp_path: Path) -> None:
    src = unpack_patched(_sdist(tmp_path), tmp_path / "src", tmp_path)
    (src / "stale").write_text("left from the last build")
    src = unpack_patched(_sdist(tmp_path), tmp_path / "src", tmp_path)
    assert not (src / "stale").exists()


def test_a_requirement_that_changed_upstream_is_one_line(tmp_path: Path) -> None:
    sdist = _sdist(tmp_path, ROOT_TOML.replace('rand = "0.9.3"', 'rand = "0.11"'))
    with pytest.raises(SdistError, match=r"^Cargo.toml of poke-engine .*: no line matches"):
        unpack_patched(sdist, tmp_path / "src", tmp_path)
