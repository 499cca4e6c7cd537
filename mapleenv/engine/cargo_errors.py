"""Which crate cargo could not resolve, read from its error: the build names it in one line
and fetches the crate's Debian package before trying again."""

from __future__ import annotations

import re
from dataclasses import dataclass

_MISSING = re.compile(
    r"no matching package (?:named `([^`]+)` found|found\s+searched package name: `([^`]+)`)"
)
_VERSION = re.compile(r"failed to select a version for the requirement `([^`\s]+) = \"([^\"]+)\"`")
_CANDIDATES = re.compile(r"candidate versions found which didn't match: ([^\n]+)")
_REQUIRED_BY = re.compile(r"required by package `([^`]+)`")


@dataclass(frozen=True)
class Unresolved:
    """A crate cargo found no version of: its requirement (None: any) and who needs it."""

    crate: str
    requirement: str | None = None
    candidates: str | None = None
    required_by: str | None = None

    def line(self) -> str:
        """One line for the user."""
        want = f'`{self.crate} = "{self.requirement}"`' if self.requirement else f"`{self.crate}`"
        found = (
            f" (Debian has {self.candidates})" if self.candidates else " (not in Debian's packages)"
        )
        by = f", needed by {self.required_by}" if self.required_by else ""
        return f"cargo could not resolve crate {want}{found}{by}"


def unresolved_crate(stderr: str) -> Unresolved | None:
    """The crate named by cargo's resolution error in ``stderr``, or None for other errors."""
    required = _REQUIRED_BY.search(stderr)
    by = required.group(1) if required else None
    match = _VERSION.search(stderr)
    if match:
        candidates = _CANDIDATES.search(stderr)
        return Unresolved(
            match.group(1), match.group(2), candidates.group(1).strip() if candidates else None, by
        )
    match = _MISSING.search(stderr)
    if match:
        return Unresolved(match.group(1) or match.group(2), required_by=by)
    return None


def debian_names(crate: str, requirement: str | None = None) -> list[str]:
    """The Debian package names that may hold ``crate``'s sources, most specific first:
    ``librust-<crate>-<major>.<minor>-dev``, ``librust-<crate>-<major>-dev`` (Debian's
    names for older semver lines) and ``librust-<crate>-dev`` (underscores as dashes)."""
    base = crate.lower().replace("_", "-")
    names = []
    if requirement:
        version = re.search(r"(\d+)(?:\.(\d+))?", requirement)
        if version:
            major, minor = version.groups()
            if major == "0" and minor is not None:
                names.append(f"librust-{base}-0.{minor}-dev")
            else:
                names.append(f"librust-{base}-{major}-dev")
    names.append(f"librust-{base}-dev")
    return names
