"""``maple-setup-sim``: install the pinned ``pokemon-showdown`` npm package for an installed
Maple (a checkout's ``make setup`` puts it in ``node_modules/`` instead).

    maple-setup-sim            # npm ci of the pinned package into <data dir>/showdown
    maple-setup-sim --check    # where the simulator is found; one line and exit code 2 if not
    maple-setup-sim --snapshot # only the startup snapshot of the package found (quiet if current)

It also builds the simulator's startup snapshot beside the package (``mapleenv.showdown.snapshot``:
hosts start from it with the simulator already loaded), again only when missing or stale.

The pins (``package.json`` and ``package-lock.json`` of the source tree) ship with the
wheel under ``<prefix>/share/maple``; the package lands in
``<data dir>/showdown/node_modules/pokemon-showdown``, where :func:`find_showdown` looks
last (data dir: ``$MAPLE_DATA_DIR``, else ``$XDG_DATA_HOME/maple``, else
``~/.local/share/maple``). Needs Node.js 18+ and npm. Run again with nothing changed, it
installs nothing and prints one line.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sysconfig
from pathlib import Path

from mapleenv.showdown import snapshot
from mapleenv.showdown.package import (
    REPO_ROOT,
    SIM_SUBDIR,
    ShowdownError,
    ShowdownNotInstalledError,
    _is_showdown_package,
    data_dir,
    find_node,
    find_showdown,
)

PINS = ("package.json", "package-lock.json")
PINS_NAME = "maple-showdown"  # the "name" of Maple's package.json
NPM_CI = (  # as scripts/setup.sh runs it
    "ci",
    "--omit=optional",
    "--ignore-scripts",
    "--no-audit",
    "--no-fund",
    "--loglevel=error",
)


def pins_dir() -> Path:
    """The folder holding the npm pins: a checkout's root, or ``<prefix>/share/maple`` of the
    environment (or the user scheme) Maple was installed into."""
    candidates = [REPO_ROOT]
    for scheme in (sysconfig.get_default_scheme(), sysconfig.get_preferred_scheme("user")):
        candidates.append(Path(sysconfig.get_path("data", scheme)) / "share" / "maple")
    for folder in candidates:
        if all((folder / name).is_file() for name in PINS) and _name(folder) == PINS_NAME:
            return folder
    raise ShowdownNotInstalledError(
        f"the simulator's npm pins ({' and '.join(PINS)}) are not installed with Maple "
        f"(looked in {', '.join(str(c) for c in candidates)}); reinstall Maple"
    )


def _name(folder: Path) -> str | None:
    try:
        return json.loads((folder / PINS[0]).read_text()).get("name")
    except (OSError, ValueError, AttributeError):
        return None


def pinned_version(pins: Path) -> str:
    """The ``pokemon-showdown`` version ``pins/package.json`` asks for."""
    return str(json.loads((pins / "package.json").read_text())["dependencies"]["pokemon-showdown"])


def installed_version(package: Path) -> str | None:
    try:
        return str(json.loads((package / "package.json").read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def install(target: Path) -> tuple[Path, bool]:
    """``npm ci`` of the pinned package into ``target``; returns the package folder and
    whether anything was installed (nothing when the pinned version is there already)."""
    pins = pins_dir()
    package = target / "node_modules" / "pokemon-showdown"
    same_lock = (target / PINS[1]).is_file() and (target / PINS[1]).read_bytes() == (
        pins / PINS[1]
    ).read_bytes()
    if (
        same_lock
        and _is_showdown_package(package)
        and installed_version(package) == pinned_version(pins)
    ):
        return package, False
    find_node()
    npm = shutil.which("npm")
    if npm is None:
        raise ShowdownNotInstalledError("npm not found on PATH (it comes with Node.js 18+)")
    target.mkdir(parents=True, exist_ok=True)
    for name in PINS:
        shutil.copyfile(pins / name, target / name)
    try:
        subprocess.run([npm, *NPM_CI], cwd=target, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise ShowdownNotInstalledError(f"`npm ci` in {target} failed: {exc}") from exc
    if not _is_showdown_package(package):
        raise ShowdownNotInstalledError(f"`npm ci` in {target} left no pokemon-showdown package")
    return package, True


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="maple-setup-sim",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--dir",
        type=Path,
        help=f"install into DIR/node_modules (default: <data dir>/{SIM_SUBDIR})",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="install nothing: print where the simulator is found (exit code 2 if nowhere)",
    )
    parser.add_argument(
        "--snapshot",
        action="store_true",
        help="install nothing: build the startup snapshot of the simulator found, if stale",
    )
    args = parser.parse_args(argv)
    try:
        if args.check or args.snapshot:
            package, changed = find_showdown(), False
        else:
            package, changed = install((args.dir or data_dir() / SIM_SUBDIR).resolve())
        node = find_node()
    except ShowdownError as exc:
        parser.exit(2, f"maple-setup-sim: {' '.join(str(exc).split())}\n")
    if args.snapshot:
        built = snapshot.ensure(package, node)
        if built:
            print(built)
        return
    verb = "installed" if changed else "found"
    line = f"maple: pokemon-showdown {installed_version(package)} {verb} at {package}"
    if not args.check and _found_elsewhere(package):
        line += f" (to use it, set MAPLE_SHOWDOWN_DIR={package})"
    print(line)
    built = None if args.check else snapshot.ensure(package, node)
    print(built or snapshot.describe(package, node))


def _found_elsewhere(package: Path) -> bool:
    """Whether Maple's lookup picks another package than ``package`` (a checkout's, or
    ``--dir`` somewhere it does not look)."""
    try:
        return find_showdown() != package
    except ShowdownError:
        return True


if __name__ == "__main__":
    main()
