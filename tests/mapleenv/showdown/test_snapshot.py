"""The simulator's startup snapshot: hosts start from it only while it matches the Node binary,
NODE_OPTIONS, the package and the snapshot's scripts it was built from; a built one passed its
seeded check battles, processes started from one blob still draw their own random teams, and a
blob Node refuses is named in the host's error."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest

from mapleenv.backends.direct.host import SimHost, SimHostError
from mapleenv.showdown import snapshot, snapshot_trust
from mapleenv.showdown.package import find_node, find_showdown


@pytest.fixture
def fake_install(tmp_path: Path) -> tuple[Path, str, Path]:
    """A package folder with a package.json, a "node" file and a cache folder (no Node run)."""
    package = tmp_path / "node_modules" / "pokemon-showdown"
    package.mkdir(parents=True)
    (package / "package.json").write_text('{"version": "0.11.11"}')
    node = tmp_path / "node"
    node.write_bytes(b"binary")
    return package, str(node), tmp_path / "cache"


def _record(package: Path, node: str, cache: Path) -> None:
    cache.mkdir(exist_ok=True)
    (cache / snapshot.BLOB_NAME).write_bytes(b"blob")
    snapshot.write_stamp(cache, package, node)


def test_a_blob_is_used_while_its_stamp_matches(fake_install, monkeypatch) -> None:
    package, node, cache = fake_install
    monkeypatch.delenv(snapshot.SWITCH, raising=False)
    assert snapshot.node_args(package, node, cache) == []  # nothing built
    _record(package, node, cache)
    assert snapshot.node_args(package, node, cache) == [
        "--snapshot-blob",
        str(cache / snapshot.BLOB_NAME),
    ]
    monkeypatch.setenv(snapshot.SWITCH, "0")
    assert snapshot.node_args(package, node, cache) == []


def test_the_default_cache_is_beside_the_package(fake_install) -> None:
    package, _, _ = fake_install
    assert snapshot.cache_dir(package) == package.parent / ".cache" / "maple"


@pytest.mark.parametrize(
    "change", ["node", "node_options", "package", "blob", "stamp", "damaged", "truncated"]
)
def test_a_stale_blob_is_not_used(fake_install, monkeypatch, change: str) -> None:
    package, node, cache = fake_install
    monkeypatch.delenv(snapshot.SWITCH, raising=False)
    monkeypatch.delenv("NODE_OPTIONS", raising=False)
    _record(package, node, cache)
    if change == "node":  # another Node binary in the same place
        Path(node).write_bytes(b"another binary")
    elif change == "node_options":  # V8 flags: Node would refuse the blob
        monkeypatch.setenv("NODE_OPTIONS", "--max-old-space-size=4096")
    elif change == "package":  # the package reinstalled
        later = (package / "package.json").stat().st_mtime_ns + 10**9
        os.utime(package / "package.json", ns=(later, later))
    elif change == "blob":
        (cache / snapshot.BLOB_NAME).unlink()
    elif change == "damaged":  # the same size, other bytes (the stamp holds its hash)
        (cache / snapshot.BLOB_NAME).write_bytes(b"blub")
    elif change == "truncated":
        (cache / snapshot.BLOB_NAME).write_bytes(b"bl")
    else:
        (cache / snapshot.STAMP_NAME).write_text("{")
    assert snapshot.node_args(package, node, cache) == []


def test_a_folder_it_cannot_write_is_one_line_not_a_traceback(fake_install, monkeypatch) -> None:
    package, node, cache = fake_install
    monkeypatch.delenv(snapshot.SWITCH, raising=False)
    cache.write_text("a file where the folder would be")
    monkeypatch.setattr(snapshot, "cache_dir", lambda _: cache)
    line = snapshot.ensure(package, node)  # set-up goes on: hosts start without it
    assert line is not None and "\n" not in line
    assert line.startswith("maple: simulator snapshot not built (cannot write to")


def _first_switch(host: SimHost, bid: str) -> str:
    lines = [
        '>start {"formatid":"gen9randombattle"}',
        '>player p1 {"name":"a"}',
        '>player p2 {"name":"b"}',
    ]
    text = "\n".join(data for _, data in host.send(bid, lines))
    return next(line for line in text.splitlines() if line.startswith("|switch|p1a:"))


@pytest.mark.integration
@pytest.mark.timeout(240)
def test_hosts_start_from_a_built_snapshot_and_draw_their_own_teams(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(snapshot.SWITCH, raising=False)
    monkeypatch.setattr(snapshot, "cache_dir", lambda _: tmp_path)
    blob = snapshot.build(find_showdown(), find_node())  # checks seeded battles match
    assert blob == tmp_path / snapshot.BLOB_NAME
    assert snapshot.node_args(find_showdown(), find_node()) == ["--snapshot-blob", str(blob)]
    hosts = [SimHost() for _ in range(3)]
    try:
        for host in hosts:
            assert str(blob) in psutil.Process(host.pid).cmdline()
        # Showdown seeds an unseeded battle from Math.random, which V8 reseeds in each process
        # started from the blob: the first battles of three hosts do not share one lead
        leads = {_first_switch(host, "1") for host in hosts}
        assert len(leads) > 1
    finally:
        for host in hosts:
            host.close()

    # V8 refuses a blob built under other flags: the stamp sees NODE_OPTIONS, and a refusal it
    # did not foresee names the way out
    monkeypatch.setenv("NODE_OPTIONS", "--max-old-space-size=4096")
    assert snapshot.node_args(find_showdown(), find_node()) == []
    monkeypatch.setattr(snapshot, "node_args", lambda *_: ["--snapshot-blob", str(blob)])
    with SimHost() as refused, pytest.raises(SimHostError, match=f"{snapshot.SWITCH}=0"):
        refused.send("1", ['>start {"formatid":"gen9randombattle"}'])


@pytest.mark.integration
@pytest.mark.timeout(240)
def test_a_host_that_dies_at_once_from_a_snapshot_restarts_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A damaged blob whose stamp still matches (recorded after the damage): the host
    dies at once (V8 aborts or crashes); its error says so, one warning, and the next
    host of the process starts without the snapshot and plays."""
    monkeypatch.delenv(snapshot.SWITCH, raising=False)
    monkeypatch.delenv("NODE_OPTIONS", raising=False)
    monkeypatch.setattr(snapshot, "cache_dir", lambda _: tmp_path)
    monkeypatch.setattr(snapshot_trust, "_distrusted", [])
    built = snapshot.cache_dir(find_showdown()) / snapshot.BLOB_NAME
    real = find_showdown().parent / ".cache" / "maple" / snapshot.BLOB_NAME
    if not real.is_file():
        pytest.skip("no snapshot built here (make setup builds one)")
    (tmp_path / snapshot.BLOB_NAME).write_bytes(real.read_bytes()[: real.stat().st_size // 2])
    snapshot.write_stamp(tmp_path, find_showdown(), find_node())
    assert snapshot.node_args(find_showdown(), find_node()) == ["--snapshot-blob", str(built)]
    with SimHost() as broken, pytest.raises(SimHostError, match="started from the startup"):
        broken.send("1", ['>start {"formatid":"gen9randombattle"}'])
        _first_switch(broken, "1")
    assert sum("died at once" in r.getMessage() for r in caplog.records) == 1
    assert snapshot.node_args(find_showdown(), find_node()) == []
    with SimHost() as host:
        assert "--snapshot-blob" not in psutil.Process(host.pid).cmdline()
        assert _first_switch(host, "1")
