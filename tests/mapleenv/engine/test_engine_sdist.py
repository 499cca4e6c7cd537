"""mapleenv.engine.sdist: the source package with Maple's changes, patched to build against
Debian's crates (a small tarball shaped as poke-engine's sdist, holding the released text Maple's
edits change, stands in for the download; the real sdist where a build cached it)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from mapleenv.engine import patches
from mapleenv.engine.pins import ENGINE_VERSION, SDIST_NAME, cache_dir
from mapleenv.engine.sdist import SdistError, unpack_offline, unpack_source

ROOT_TOML = '[dependencies]\ndashmap = "6.1.0"\nrand = "0.9.3"\n'
PY_TOML = '[dependencies]\npyo3 = { version = "0.29.0", features = ["extension-module"] }\n'


def _released_sources() -> dict[str, str]:
    """Each file Maple's edits change, as the release's text they replace."""
    files: dict[str, str] = {}
    for name, old, _ in patches.EDITS:
        files[name] = files.get(name, "// poke-engine\n") + old + "\n// ...\n"
    return files


def _sdist(tmp_path: Path, root_toml: str = ROOT_TOML, **changed: str) -> Path:
    path = tmp_path / "sdist.tar.gz"
    top = f"poke_engine-{ENGINE_VERSION}"
    with tarfile.open(path, "w:gz") as tar:
        for name, text in {
            "Cargo.toml": root_toml,
            "poke-engine-py/Cargo.toml": PY_TOML,
            "Cargo.lock": "# pinned to crates.io\n",
            **_released_sources(),
            **changed,
        }.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_requirements_widened_lock_removed_registry_replaced(tmp_path: Path) -> None:
    registry = tmp_path / "crates" / "usr/share/cargo/registry"
    src = unpack_offline(_sdist(tmp_path), tmp_path / "src", registry)
    assert 'rand = ">=0.9.3, <0.11"' in (src / "Cargo.toml").read_text()
    assert 'dashmap = "6.1.0"' in (src / "Cargo.toml").read_text()
    py = (src / "poke-engine-py" / "Cargo.toml").read_text()
    assert 'pyo3 = { version = ">=0.28, <0.30", features = ["extension-module"] }' in py
    assert not (src / "Cargo.lock").exists()
    config = (src / ".cargo" / "config.toml").read_text()
    assert 'replace-with = "debian"' in config and f'directory = "{registry}"' in config
    assert "offline = true" in config


def test_unpacking_again_starts_fresh(tmp_path: Path) -> None:
    src = unpack_offline(_sdist(tmp_path), tmp_path / "src", tmp_path)
    (src / "stale").write_text("left from the last build")
    src = unpack_offline(_sdist(tmp_path), tmp_path / "src", tmp_path)
    assert not (src / "stale").exists()


def test_a_requirement_that_changed_upstream_is_one_line(tmp_path: Path) -> None:
    sdist = _sdist(tmp_path, ROOT_TOML.replace('rand = "0.9.3"', 'rand = "0.11"'))
    with pytest.raises(SdistError, match=r"^Cargo.toml of poke-engine .*: no line matches"):
        unpack_offline(sdist, tmp_path / "src", tmp_path)


def test_the_edits_are_applied_on_both_paths(tmp_path: Path) -> None:
    for src in (
        unpack_source(_sdist(tmp_path), tmp_path / "registry"),
        unpack_offline(_sdist(tmp_path), tmp_path / "offline", tmp_path),
    ):
        mcts = (src / "src" / "mcts.rs").read_text()
        assert "StdRng::seed_from_u64(s)" in mcts and "pub fn perform_mcts_seeded(" in mcts
        assert "self.prior * (parent_visits as f32).sqrt()" in mcts
        bindings = (src / "poke-engine-py" / "src" / "lib.rs").read_text()
        assert "seed=None, prior=None))]" in bindings and "std::panic::set_hook" in bindings
        assert "seed: int | None = None" in (src / "python/poke_engine/__init__.py").read_text()
    assert (tmp_path / "registry" / f"poke_engine-{ENGINE_VERSION}" / "Cargo.lock").exists()


def test_a_source_the_edits_do_not_fit_is_one_line(tmp_path: Path) -> None:
    sdist = _sdist(tmp_path, **{"src/mcts.rs": "fn run_mcts_loop() {}\n"})
    message = r"^cannot apply Maple's changes .*src/mcts.rs: "
    with pytest.raises(SdistError, match=message) as caught:
        unpack_source(sdist, tmp_path / "src")
    assert "\n" not in str(caught.value)


def test_the_edits_fit_the_released_sdist(tmp_path: Path) -> None:
    sdist = cache_dir() / "sdist" / SDIST_NAME
    if not sdist.is_file():
        pytest.skip("the sdist is cached by an engine build (make setup)")
    src = unpack_source(sdist, tmp_path)  # each edit matched exactly once
    assert "seed: Option<u64>," in (src / "poke-engine-py" / "src" / "lib.rs").read_text()
