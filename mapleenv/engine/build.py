"""Build the gen 9 poke-engine wheel: first as pip would (cargo fetching crates from the Rust
crate registry), and where that registry cannot be reached, offline from Debian's packaged
crate sources pinned in ``debian-crates.lock``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from mapleenv.engine.cargo_errors import debian_names, unresolved_crate
from mapleenv.engine.debian import REGISTRY, PrivateApt, unpack
from mapleenv.engine.lock import download_requests, read_lock
from mapleenv.engine.pins import ENGINE_VERSION, GEN9_FEATURES, MATURIN_ARGS_ENV
from mapleenv.engine.sdist import fetch, unpack_offline, unpack_source

# The registry path fails in ~3 s where the registry is unreachable (no retries, short
# timeouts); where it is reachable, the whole build fits well inside this
REGISTRY_TIMEOUT_S = 1800
OFFLINE_TIMEOUT_S = 1800
MAX_ADDED_CRATES = 40  # crates fetched beyond the lock before the build gives up


class BuildError(RuntimeError):
    """The wheel could not be built: one line (the log holds the rest)."""


def pip_wheel(src: Path, out: Path, log: Path, env: dict[str, str], timeout: float) -> Path:
    """``pip wheel`` of the unpacked source ``src`` (run in it) with the gen 9 maturin
    arguments, output appended to ``log``; the wheel built in ``out``."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "-v",  # the build backend's output (cargo's errors) into the log
        "-w",
        str(out),
        str(src),
    ]
    env = {**os.environ, MATURIN_ARGS_ENV: " ".join(GEN9_FEATURES), **env}
    with log.open("a") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        try:
            done = subprocess.run(
                cmd, cwd=src, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            raise BuildError(f"pip wheel ran past {timeout:.0f} s") from None
    wheels = sorted(out.glob("poke_engine-*.whl"))
    if done.returncode != 0 or not wheels:
        raise BuildError(f"pip wheel failed (exit {done.returncode}): {_last_error(log)}")
    return wheels[0]


def registry_build(cache: Path, out: Path, log: Path) -> Path:
    """The normal path: the pinned sdist with Maple's changes, cargo fetching crates from
    crates.io at the versions of the sdist's own Cargo.lock."""
    src = unpack_source(fetch(cache), cache / "src")
    env = {"CARGO_NET_RETRY": "0", "CARGO_HTTP_TIMEOUT": "10"}
    return pip_wheel(src, out, log, env, REGISTRY_TIMEOUT_S)


def offline_build(
    cache: Path, out: Path, log: Path, say: Callable[[str], None]
) -> tuple[Path, dict[str, str], list[str]]:
    """The wheel built against Debian sid's crate sources; with the ``{package: version}`` of
    the crate packages it built against and the lock's pins that moved."""
    apt = PrivateApt(cache / "apt")
    apt.prepare()
    apt.update()
    pins = read_lock()
    requests, moved = download_requests(pins, apt.versions(list(pins)))
    debs, crates = cache / "debs", cache / "crates"
    for folder in (debs, crates):
        shutil.rmtree(folder, ignore_errors=True)
    built = unpack(apt.download(requests, debs), crates)
    src = unpack_offline(fetch(cache), cache / "src", crates / REGISTRY)
    _resolve(src, apt, debs, crates, built, log)
    say(f"compiling poke-engine {ENGINE_VERSION} against {len(built)} Debian crate packages")
    wheel = pip_wheel(src, out, log, {"CARGO_NET_OFFLINE": "true"}, OFFLINE_TIMEOUT_S)
    shutil.rmtree(src / "target", ignore_errors=True)  # ~0.5 GB of build products
    return wheel, built, moved


def _resolve(
    src: Path, apt: PrivateApt, debs: Path, crates: Path, built: dict[str, str], log: Path
) -> None:
    """``cargo generate-lockfile`` until it resolves, fetching the Debian package of each crate
    it names as missing; one line naming the crate where Debian has none that fits."""
    cargo = shutil.which("cargo")
    if cargo is None:
        raise BuildError("cargo is not on PATH: install Rust (https://rustup.rs)")
    tried = set(built)
    for _ in range(MAX_ADDED_CRATES):
        done = subprocess.run(
            [cargo, "generate-lockfile", "--offline"], cwd=src, capture_output=True, text=True
        )
        with log.open("a") as f:
            f.write(f"$ cargo generate-lockfile --offline\n{done.stderr}")
        if done.returncode == 0:
            return
        missing = unresolved_crate(done.stderr)
        if missing is None:
            raise BuildError(f"cargo generate-lockfile failed: {_last_error(log)}")
        names = [n for n in debian_names(missing.crate, missing.requirement) if n not in tried]
        available = apt.versions(names)
        names = [n for n in names if n in available]
        if not names:
            raise BuildError(missing.line())
        tried.update(names)
        built.update(unpack(apt.download(names, debs), crates))
    raise BuildError(f"more than {MAX_ADDED_CRATES} crates missing from the lock")


_PIP_GENERIC = (
    "error: metadata-generation-failed",
    "error: subprocess-exited-with-error",
    "error: failed-wheel-build-for-install",
    "error: failed building wheel",
)


def _last_error(log: Path) -> str:
    """The first line of ``log``'s last command that reads as a real error (cargo's or
    maturin's, not pip's generic summary), else its last line."""
    text = log.read_text(errors="replace").rsplit("\n$ ", 1)[-1]
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for line in lines:
        low = line.lower()
        if (low.startswith(("error", "💥")) or "error:" in low) and not low.startswith(
            _PIP_GENERIC
        ):
            return line[:300]
    return lines[-1][:300] if lines else "no output"
