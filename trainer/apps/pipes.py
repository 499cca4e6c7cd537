"""Printing-only invocations (``--help``, ``--cfg``, ``--info``) piped into a reader that
stops early (``python -m trainer --help | head``) end quietly, as Unix tools do, instead of
Hydra printing a BrokenPipeError traceback. Training, evaluation and play keep Python's
default (a closed pipe is an error there: env workers talk over pipes)."""

from __future__ import annotations

import signal
from collections.abc import Sequence

PRINT_ONLY = ("--help", "-h", "--hydra-help", "--cfg", "-c", "--info", "--resolve")


def quiet_closed_pipe(argv: Sequence[str]) -> bool:
    """Restore SIGPIPE's default (exit without a traceback) when ``argv`` only prints;
    returns whether it did."""
    if not any(arg in PRINT_ONLY for arg in argv):
        return False
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    return True
