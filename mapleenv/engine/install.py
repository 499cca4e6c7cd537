"""Install the gen 9 poke-engine into this Python: from the machine's wheel cache, else built
once (the crate registry first, else offline from Debian's crate sources) and cached.

    python -m mapleenv.engine.install           # install; one line saying what it did
    python -m mapleenv.engine.install --setup   # as `make setup` runs it: quiet when installed,
                                                # one warning line (exit 0) when it cannot
    python -m mapleenv.engine.install --check   # one line; exit 2 when not installed
    python -m mapleenv.engine.install --force   # rebuild, even with a cached wheel
    python -m mapleenv.engine.install --write-lock  # after the build, rewrite debian-crates.lock

The cache (``$MAPLE_ENGINE_CACHE``, else ``~/.cache/maple/engine-build``) is shared by every
checkout of the user: a second set-up, or a fresh clone, installs the cached wheel in seconds.
"""

from __future__ import annotations

import argparse
import fcntl
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mapleenv.engine.build import BuildError, offline_build, registry_build
from mapleenv.engine.debian import DebianError
from mapleenv.engine.lock import LOCK_PATH, LockError, format_lock, read_lock
from mapleenv.engine.pins import ENGINE_VERSION, cache_dir, cached_wheel, wheel_dir
from mapleenv.engine.require import INSTALL_STEP, engine_status
from mapleenv.engine.sdist import SdistError

NAME = f"poke-engine {ENGINE_VERSION} (gen 9)"
BUILT_LOCK = "debian-crates.lock"
LOCK_HEADER = LOCK_PATH.read_text().split("\nlibrust-", 1)[0].replace("# ", "").rstrip()


def _say(line: str) -> None:
    print(f"maple: {line}", flush=True)


def installed() -> bool:
    """Whether this Python has the pinned gen 9 build."""
    version, gen9 = engine_status()
    return version == ENGINE_VERSION and gen9


@contextmanager
def _cache_lock(cache: Path) -> Iterator[None]:
    """One build at a time per machine: a second set-up waits, then finds the wheel."""
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".lock").open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def build(cache: Path, log: Path, offline_only: bool = False) -> Path:
    """Build the wheel into the cache (registry path, then offline); its path."""
    if shutil.which("cargo") is None:  # both paths compile Rust
        raise BuildError("cargo is not on PATH: install Rust (https://rustup.rs)")
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    target = wheel_dir(cache)
    out = cache / "out"
    try:
        if offline_only:
            raise BuildError("registry path skipped")
        wheel = registry_build(cache, out, log)
        built: dict[str, str] | None = None
    except BuildError:
        _say(
            f"building {NAME} offline from Debian's crate sources, once per machine "
            f"(about a minute on 2 cores; log: {log})"
        )
        wheel, built, moved = offline_build(cache, out, log, _say)
        if moved:
            _say(
                f"Debian moved {len(moved)} pinned crate packages: {', '.join(moved[:4])}"
                + (" ..." if len(moved) > 4 else "")
            )
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    final = target / wheel.name
    shutil.move(str(wheel), final)
    if built is not None:
        (target / BUILT_LOCK).write_text(format_lock(built, LOCK_HEADER))
    for scratch in ("apt", "debs", "crates", "src", "out"):  # ~200 MB, needed only to build
        shutil.rmtree(cache / scratch, ignore_errors=True)
    return final


def pip_install(wheel: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "-q",
        "--no-deps",
        "--no-index",
        "--force-reinstall",
        "--disable-pip-version-check",
        str(wheel),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines() or ["no output"]
        raise BuildError(f"pip install {wheel.name} failed: {lines[-1]}")


def install(force: bool = False, offline_only: bool = False, write_lock: bool = False) -> str:
    """Install the engine; the line saying how (raises the one-line errors of the build)."""
    cache = cache_dir()
    log = cache / "build.log"
    with _cache_lock(cache):
        wheel = None if force else cached_wheel(cache)
        started = time.monotonic()
        how = "from the wheel cache"
        if wheel is None:
            wheel = build(cache, log, offline_only)
            how = f"built in {time.monotonic() - started:.0f} s, cached"
        pip_install(wheel)
    built_lock = wheel.parent / BUILT_LOCK
    note = ""
    if built_lock.is_file() and read_lock(built_lock) != read_lock():
        if write_lock:
            LOCK_PATH.write_text(built_lock.read_text())
            note = f"; {LOCK_PATH} rewritten"
        else:
            note = f"; the Debian crates that built differ from the lock: see {built_lock}"
    probe = subprocess.run(
        [sys.executable, "-c", "from mapleenv.engine.require import require_engine as r; r()"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        raise BuildError(
            f"{wheel.name} installed but does not load: "
            f"{(probe.stderr.strip().splitlines() or ['?'])[-1]}"
        )
    return f"{NAME} installed {how} ({wheel}){note}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--setup", action="store_true", help="as make setup runs it")
    parser.add_argument("--check", action="store_true", help="only say whether it is installed")
    parser.add_argument("--force", action="store_true", help="rebuild even with a cached wheel")
    parser.add_argument("--offline", action="store_true", help="skip the crate-registry path")
    parser.add_argument("--write-lock", action="store_true", help="rewrite debian-crates.lock")
    args = parser.parse_args(argv)
    if args.check:
        if installed():
            print(f"{NAME} is installed")
            return 0
        print(f"error: {NAME} is not installed: {INSTALL_STEP}", file=sys.stderr)
        return 2
    if not args.force and installed():
        if not args.setup:
            print(f"{NAME} is already installed")
        return 0
    try:
        _say(install(args.force, args.offline, args.write_lock))
    except (BuildError, DebianError, SdistError, LockError, OSError) as exc:
        log = cache_dir() / "build.log"
        if args.setup:
            print(
                f"maple: warning: {NAME} not installed, engine search and its tests are "
                f"unavailable: {exc} (log: {log})",
                file=sys.stderr,
            )
            return 0
        print(f"error: {NAME} not installed: {exc} (log: {log})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
