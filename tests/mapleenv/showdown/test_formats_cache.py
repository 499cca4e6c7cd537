"""The simulator's format list is kept in Maple's data folder: a process reads it instead of
starting Node, a file that is not a listing is listed anew, and a changed simulator package
(its version or formats file) gets a file of its own; two installs of the same one share it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mapleenv.showdown import formats
from mapleenv.showdown.package import find_showdown


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("MAPLE_DATA_DIR", str(tmp_path))
    formats.known_formats.cache_clear()
    yield tmp_path
    formats.known_formats.cache_clear()  # the other tests list with their own data folder


def _no_node(*args: object, **kwargs: object) -> None:
    raise AssertionError(f"Node was started: {args}")


def test_a_kept_listing_is_read_without_starting_node(data_dir: Path, monkeypatch) -> None:
    cache = formats._cache_file(find_showdown())
    assert cache is not None and cache.is_relative_to(data_dir)
    cache.parent.mkdir(parents=True)
    cache.write_text(json.dumps({"gen9kept": [False, "singles"], "gen9vgckept": [True, "doubles"]}))
    monkeypatch.setattr(formats, "NodeChild", _no_node)
    assert formats.known_formats() == {
        "gen9kept": (False, "singles"),
        "gen9vgckept": (True, "doubles"),
    }


@pytest.mark.parametrize("text", ["", "{", "[]", "{}", '{"gen9x": [true]}', '{"gen9x": 3}'])
def test_a_file_that_is_not_a_listing_is_not_read(data_dir: Path, text: str) -> None:
    path = data_dir / "formats.json"
    path.write_text(text)
    assert formats._read_cache(path) is None


def test_the_file_is_named_by_the_package_version_and_formats_file(tmp_path: Path) -> None:
    package = tmp_path / "pokemon-showdown"
    (package / "dist" / "config").mkdir(parents=True)
    (package / "package.json").write_text('{"version": "0.11.11"}')
    (package / "dist" / "config" / "formats.js").write_text("exports.Formats = [];")
    first = formats._cache_file(package)
    (package / "package.json").write_text('{"version": "0.11.12"}')
    second = formats._cache_file(package)
    (package / "dist" / "config" / "formats.js").write_text("exports.Formats = [1];")
    third = formats._cache_file(package)
    assert first is not None and len({first, second, third}) == 3
    copy = tmp_path / "another install" / "pokemon-showdown"
    (copy / "dist" / "config").mkdir(parents=True)
    (copy / "package.json").write_text('{"version": "0.11.12"}')
    (copy / "dist" / "config" / "formats.js").write_text("exports.Formats = [1];")
    assert formats._cache_file(copy) == third  # the same package elsewhere: the same file
    (package / "package.json").unlink()
    assert formats._cache_file(package) is None  # unreadable: listed every time, not kept


@pytest.mark.integration  # node lists the simulator's formats
def test_the_first_listing_is_kept_and_the_next_process_reads_it(data_dir: Path) -> None:
    listed = formats.known_formats()
    assert listed["gen9randombattle"] == (False, "singles")
    assert listed["gen9randomdoublesbattle"] == (False, "doubles")
    (kept,) = (data_dir / "cache").glob("formats-*.json")
    assert kept == formats._cache_file(find_showdown())
    assert list((data_dir / "cache").glob(".formats-*")) == []  # no temp file left
    formats.known_formats.cache_clear()  # as a new process would
    assert formats.known_formats() == listed
    kept.write_text("not json")  # damaged: listed anew and kept again
    formats.known_formats.cache_clear()
    assert formats.known_formats() == listed
    assert formats._read_cache(kept) == listed


def test_node_listing_output_is_parsed_strictly() -> None:
    with pytest.raises(ValueError):
        formats._parse({"gen9x": ["yes"]})
    assert formats._parse({"gen9x": [0, "singles"]}) == {"gen9x": (False, "singles")}
