"""Decide what scripts/setup.sh does about torch: keep, install or replace it.

    python scripts/setup/torch_spec.py [--requested] [--installed VERSION|none] SPEC

Prints one line, ``ACTION<TAB>message``, ACTION being

* ``keep``    -- the installed torch is what was asked for (or nothing was asked for:
  without ``--requested``, i.e. ``TORCH_SPEC`` unset, any installed torch is kept, so a
  plain ``make setup`` never swaps a CUDA build for the CPU default);
* ``install`` -- no torch is installed: install SPEC;
* ``replace`` -- ``TORCH_SPEC`` was set and the installed torch does not match it: its
  version is outside SPEC's specifier (``torch==2.5.1+cu124`` while 2.13.0+cpu is
  installed), or SPEC is a bare ``torch`` (the platform's default build from the index)
  while a ``+cpu`` build is installed. pip alone would keep the installed wheel
  ("requirement already satisfied"), so setup uninstalls it first.

``--installed`` overrides the installed version (``none``: not installed), for tests.
Only the standard library and ``packaging`` (pip's vendored copy when it is not
installed) are used: this runs in a fresh venv.
"""

from __future__ import annotations

import argparse
import sys
from importlib import metadata

try:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import InvalidVersion, Version
except ImportError:  # a fresh venv: pip's vendored copy
    from pip._vendor.packaging.requirements import InvalidRequirement, Requirement
    from pip._vendor.packaging.version import InvalidVersion, Version


def installed_torch() -> str | None:
    """The installed torch version (``None`` if torch is not installed)."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def decide(spec: str, installed: str | None, requested: bool = True) -> tuple[str, str]:
    """``(action, message)`` for ``spec`` given the ``installed`` version (see module docs)."""
    try:
        requirement = Requirement(spec)
    except InvalidRequirement as exc:
        raise ValueError(f"TORCH_SPEC={spec!r} is not a pip requirement: {exc}") from exc
    if requirement.name.lower() != "torch" or requirement.url:
        raise ValueError(f"TORCH_SPEC={spec!r} must name torch (e.g. torch==2.13.0 or torch)")
    if installed is None:
        return "install", f"installing {spec} (no torch installed)"
    if not requested:
        return "keep", f"keeping torch {installed} (TORCH_SPEC not set)"
    try:
        version = Version(installed)
    except InvalidVersion:
        return "replace", f"replacing torch {installed} (unparseable version) with {spec}"
    if requirement.specifier:
        if requirement.specifier.contains(version, prereleases=True):
            return "keep", f"torch {installed} matches {spec}"
        return "replace", f"replacing torch {installed} with {spec} (TORCH_SPEC)"
    if version.local is not None and version.local.startswith("cpu"):
        return "replace", (
            f"replacing the CPU build torch {installed} with {spec} (the index's default build)"
        )
    return "keep", f"torch {installed} matches {spec}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Print 'keep|install|replace<TAB>message' for a TORCH_SPEC."
    )
    parser.add_argument("spec", help="the torch requirement, e.g. torch==2.13.0 or torch")
    parser.add_argument(
        "--requested",
        action="store_true",
        help="TORCH_SPEC was set explicitly (else an installed torch is kept)",
    )
    parser.add_argument(
        "--installed",
        default=None,
        help="pretend this torch version is installed ('none': not installed)",
    )
    args = parser.parse_args(argv)
    if args.installed is None:
        installed = installed_torch()
    else:
        installed = None if args.installed == "none" else args.installed
    try:
        action, message = decide(args.spec, installed, args.requested)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{action}\t{message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
