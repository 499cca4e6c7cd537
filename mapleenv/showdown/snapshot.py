"""Maple's V8 startup snapshot of the loaded simulator (``mapleenv/js/snapshot.js``).

A fresh Node process spends ~1 s of CPU compiling and executing the simulator's modules and
data before its first battle; started from the snapshot, its heap already holds them. The
blob lives beside the npm package (``node_modules/.cache/maple/``) with a stamp naming the
Node binary, ``NODE_OPTIONS``, the scripts it was built from and the blob's own size and
SHA-256; :func:`node_args` gives the flag that starts a host from it only while that stamp
holds, so a new Node, other V8 flags, a reinstalled package, a changed entry or a damaged
blob fall back to a plain start until it is rebuilt. A host that dies at once from it
anyway makes the process start the next ones without it (one warning:
:mod:`mapleenv.showdown.snapshot_trust`).

    maple-setup-sim --snapshot   # build it if missing or stale (`make setup` runs this)
    maple-setup-sim --check      # where the simulator is, and whether hosts start from it

:func:`build` keeps a blob only after seeded battles (singles and doubles) played from it
print exactly what they print without it. ``MAPLE_SIM_SNAPSHOT=0`` turns it off.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import re
import tempfile
import threading
import time
from pathlib import Path

from mapleenv.showdown.child import NodeChild
from mapleenv.showdown.package import ShowdownError, find_node, find_showdown
from mapleenv.showdown.snapshot_trust import SWITCH, distrusted, switched_off

JS_DIR = Path(__file__).resolve().parents[1] / "js"
ENTRY = JS_DIR / "snapshot.js"
HOST_SCRIPT = JS_DIR / "sim_host.js"
BLOB_NAME = "sim-snapshot.blob"
STAMP_NAME = "sim-snapshot.json"
BUILD_TIMEOUT_S = 300.0
BUILDER = "`node --build-snapshot`"
_TIMESTAMP = re.compile(rb"^\|t:\|\d+$", re.MULTILINE)
logger = logging.getLogger(__name__)


class SnapshotError(ShowdownError):
    """The snapshot could not be built, or played differently from a plain start."""


def cache_dir(showdown_dir: Path) -> Path:
    """``node_modules/.cache/maple`` beside the package: removed with the package."""
    return Path(showdown_dir).parent / ".cache" / "maple"


def stamp(showdown_dir: Path, node: str) -> dict:
    """What a blob depends on: the Node binary (path, size, mtime), ``NODE_OPTIONS`` (V8
    refuses a blob built under other V8 flags: exit code 14), the package and the snapshot's
    own scripts. A blob is used only where its recorded stamp equals this one."""
    binary = Path(node).resolve()
    info = binary.stat()
    digest = hashlib.sha256()
    for script in (ENTRY, JS_DIR / "load_sim.js"):
        digest.update(script.read_bytes())
    package = Path(showdown_dir).resolve()
    return {
        "node": [str(binary), info.st_size, info.st_mtime_ns],
        "node_options": os.environ.get("NODE_OPTIONS", ""),
        "package": [str(package), (package / "package.json").stat().st_mtime_ns],
        "scripts": digest.hexdigest(),
    }


@functools.cache
def _blob_digest(path: str, size: int, mtime_ns: int, inode: int) -> str:
    """The SHA-256 of a blob, read once per version of the file in a process."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def blob_stamp(blob: Path) -> list:
    """``[size, sha256]`` of the blob: a damaged or truncated blob no longer matches."""
    info = blob.stat()
    return [info.st_size, _blob_digest(str(blob), info.st_size, info.st_mtime_ns, info.st_ino)]


def write_stamp(folder: Path, showdown_dir: Path, node: str) -> None:
    """Record the stamp of the blob in ``folder`` (atomically: a temp file, a rename)."""
    text = json.dumps({**stamp(showdown_dir, node), "blob": blob_stamp(folder / BLOB_NAME)})
    (folder / f".{STAMP_NAME}.tmp").write_text(text)
    os.replace(folder / f".{STAMP_NAME}.tmp", folder / STAMP_NAME)


def node_args(showdown_dir: Path, node: str, cache: Path | None = None) -> list[str]:
    """``["--snapshot-blob", BLOB]`` when a blob built for this Node and package is there and
    the snapshot is not switched off; else ``[]`` (a plain start, the same battles)."""
    if switched_off():
        return []
    folder = cache or cache_dir(showdown_dir)
    blob = folder / BLOB_NAME
    if distrusted(blob):
        return []
    try:
        recorded = json.loads((folder / STAMP_NAME).read_text())
        current = {**stamp(showdown_dir, node), "blob": blob_stamp(blob)}
    except (OSError, ValueError):
        return []
    if recorded != current:
        return []
    return ["--snapshot-blob", str(blob)]


def node_command(node: str, script: Path, showdown_dir: Path, *args: str) -> list[str]:
    """The command line that runs one of Maple's Node programs for ``showdown_dir``: from
    the snapshot where :func:`node_args` allows it."""
    return [node, *node_args(showdown_dir, node), str(script), str(showdown_dir), *args]


def _run_host(node: str, prefix: list[str], showdown_dir: Path, script: str) -> bytes:
    """What ``sim_host.js`` prints for ``script``, read until every line is acknowledged (the
    host exits at the end of its input without flushing what is still queued)."""
    child = NodeChild(
        [node, *prefix, str(HOST_SCRIPT), str(showdown_dir)],
        name="the snapshot's check host",
        error=SnapshotError,
    )
    writer = threading.Thread(target=_feed, args=(child, script.encode()), daemon=True)
    writer.start()
    sep, expected, acks, out = b"\nack\n\n", script.count("\n"), 0, b""
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    try:
        while acks < expected:  # a host that hangs or dies: SnapshotError, one line + tail
            left = max(deadline - time.monotonic(), 0.0)
            piece = child.reader.read_through(sep, left, "the check battles")
            out += piece + sep
            acks += piece.count(sep) + 1
    finally:
        writer.join(5)
        child.kill()
        child.close()
    return _TIMESTAMP.sub(b"", out)


def _feed(child: NodeChild, data: bytes) -> None:
    with contextlib.suppress(SnapshotError):  # it died: the reads say why
        child.write(data)


def check_script(turns: int = 60) -> str:
    """``sim_host.js`` input: one seeded singles and one seeded doubles battle of default
    choices (the teams are seeded too), each to its end or ``turns`` turns."""
    lines = []
    for ident, format_id in (("1", "gen9randombattle"), ("2", "gen9randomdoublesbattle")):
        lines += [
            f'{ident} >start {{"formatid":"{format_id}","seed":[1,2,3,{ident}]}}',
            f'{ident} >player p1 {{"name":"a","seed":[5,6,7,{ident}]}}',
            f'{ident} >player p2 {{"name":"b","seed":[9,10,11,{ident}]}}',
        ]
        lines += [f"{ident} >p1 default\n{ident} >p2 default" for _ in range(turns)]
    return "\n".join(lines) + "\n"


def build(
    showdown_dir: Path | None = None, node: str | None = None, cache: Path | None = None
) -> Path:
    """Build the blob (replacing a stale one) and keep it only if the check battles play the
    same from it as without it; :class:`SnapshotError` if not. Returns the blob's path."""
    showdown_dir = Path(showdown_dir) if showdown_dir is not None else find_showdown()
    node = node or find_node()
    folder = cache or cache_dir(showdown_dir)
    try:  # a package folder this user cannot write to: no snapshot, said in one line
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=".building-", suffix=".blob", dir=folder)
    except OSError as exc:
        raise SnapshotError(f"cannot write to {folder}: {exc.strerror or exc}") from exc
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        cmd = [node, "--snapshot-blob", str(tmp), "--build-snapshot", str(ENTRY)]
        with NodeChild([*cmd, str(showdown_dir)], name=BUILDER, error=SnapshotError) as made:
            made.communicate(b"", BUILD_TIMEOUT_S)  # it failed: its death, in one line
        if tmp.stat().st_size == 0:
            raise SnapshotError(f"{BUILDER} wrote an empty blob")
        script = check_script()
        plain = _run_host(node, [], showdown_dir, script)
        snapped = _run_host(node, ["--snapshot-blob", str(tmp)], showdown_dir, script)
        if plain != snapped or b"|win|" not in plain:
            raise SnapshotError(
                "the check battles played differently from the snapshot than without it; "
                "hosts start without it"
            )
        tmp.chmod(0o644)
        os.replace(tmp, folder / BLOB_NAME)
        write_stamp(folder, showdown_dir, node)
    except OSError as exc:
        raise SnapshotError(f"building the simulator snapshot failed: {exc}") from exc
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return folder / BLOB_NAME


def ensure(showdown_dir: Path, node: str, force: bool = False) -> str | None:
    """Build the blob unless it is current (or switched off); one line saying what was done,
    or ``None`` when nothing was. A failed build is said, not raised: hosts start without it."""
    if switched_off() or (node_args(showdown_dir, node) and not force):
        return None
    start = time.perf_counter()
    try:
        blob = build(showdown_dir, node)
    except SnapshotError as exc:
        return f"maple: simulator snapshot not built ({' '.join(str(exc).split())})"
    size = blob.stat().st_size / 2**20
    took = time.perf_counter() - start
    return f"maple: simulator snapshot built ({blob}, {size:.0f} MiB, {took:.1f} s)"


def describe(showdown_dir: Path, node: str) -> str:
    """One line: whether hosts of this package start from the snapshot."""
    blob = cache_dir(showdown_dir) / BLOB_NAME
    if switched_off():
        return f"maple: simulator snapshot switched off ({SWITCH}={os.environ[SWITCH]})"
    if node_args(showdown_dir, node):
        return f"maple: simulator snapshot in use ({blob})"
    return f"maple: simulator snapshot not built or stale, hosts start without it ({blob})"
