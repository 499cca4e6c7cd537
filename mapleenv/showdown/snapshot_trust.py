"""Whether this process still trusts the startup snapshot (:mod:`mapleenv.showdown.snapshot`),
and the hints a Node child's death message gives about it (:mod:`mapleenv.showdown.child`).

A host started from the blob that crashes at once (a damaged blob whose stamp still holds,
V8 refusing it) makes this process start the next ones without it: one warning, and
:func:`distrusted` says so from then on.
"""

from __future__ import annotations

import logging
import os

SWITCH = "MAPLE_SIM_SNAPSHOT"
DIED_AT_ONCE_S = 10.0  # a host from the snapshot that dies this soon: the blob is not used again
# how a Node process crashes (SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGSEGV; 128 + those): V8 on a
# blob it cannot read
CRASHES = frozenset({-4, -5, -6, -7, -11, 132, 133, 134, 135, 139})
logger = logging.getLogger("mapleenv.showdown.snapshot")
_distrusted: list[str] = []  # blobs a host died at once from (this process no longer uses them)


def distrusted(blob: object) -> bool:
    """Whether a host died at once from ``blob`` in this process."""
    return str(blob) in _distrusted


def host_died(command: list[str], seconds: float, code: int | None) -> str:
    """Called when a Node program (:func:`mapleenv.showdown.snapshot.node_command`) died
    ``seconds`` after its start: one that ran from the snapshot and crashed (:data:`CRASHES`)
    at once makes this process start the next ones without it (said once, as a warning);
    the hint for its error line, or ``""``."""
    if "--snapshot-blob" not in command or "--build-snapshot" in command:
        return ""  # not started from a blob (the builder writes one)
    if seconds > DIED_AT_ONCE_S or code not in CRASHES:
        return ""  # killed or stopped by someone (SIGKILL, SIGTERM): not the blob
    blob = command[command.index("--snapshot-blob") + 1]
    if blob not in _distrusted:
        _distrusted.append(blob)
        logger.warning(
            "a simulator host died at once (code %s) started from Maple's startup snapshot "
            "%s; hosts start without it from here (rebuild it: maple-setup-sim --snapshot)",
            code,
            blob,
        )
    return f" (it started from the startup snapshot {blob}: hosts now start without it)"


def switched_off() -> bool:
    return os.environ.get(SWITCH, "1").strip().lower() in ("0", "false", "no", "off")


def refused_hint(stderr: str) -> str:
    """What to do when Node refused the blob (a change the stamp does not see), for the
    error of a host that died: ``""`` for any other death."""
    if "startup snapshot" not in stderr:
        return ""
    return f" (Node refused Maple's startup snapshot: {SWITCH}=0 starts hosts without it)"
