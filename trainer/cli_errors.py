"""Bad input to the CLIs is one error line and exit code 2 (:func:`fail`).

A bad override (``battles=abc``, ``+experiment=nope``, ``env.nope=1``, a syntax error) is
one error line and exit code 2, as every other bad input to the CLIs is, instead of Hydra's
multi-line report and exit code 1. ``HYDRA_FULL_ERROR=1`` still gives Hydra's full report.

Hydra composes the config inside ``hydra._internal.utils.run_and_report``, before any of
Maple's code or callbacks run; wrapping that function is the one place to catch it
(pinned Hydra 1.3; ``tests/trainer/config/test_hostile_cli.py`` fails if that moves)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

MAX_LINE = 2000  # characters of the message: one short line whatever the input


def fail(message: str, logger: str = "trainer") -> None:
    """The one error line (in the format of the log's lines: logging is not set up yet),
    then exit code 2. Whitespace runs become one space, control characters are escaped and
    the message is cut to :data:`MAX_LINE` characters."""
    from mapleenv.paths import printable

    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    text = printable(" ".join(str(message)[: 2 * MAX_LINE].split()), max_len=MAX_LINE)
    print(f"[{stamp}][{logger}][ERROR] - {text}", file=sys.stderr)
    sys.exit(2)


def one_line_config_errors(logger: str) -> None:
    """Report Hydra's composition errors (:class:`hydra.errors.CompactHydraException`) as
    ``[ERROR]`` lines of ``logger`` with exit code 2."""
    from hydra._internal import utils
    from hydra.errors import CompactHydraException
    from omegaconf.errors import OmegaConfBaseException

    original = utils.run_and_report
    if getattr(original, "maple_one_line", False):
        return

    def run_and_report(func: Callable[[], Any]) -> Any:
        def composed() -> Any:
            try:
                return func()
            except CompactHydraException as exc:
                if os.environ.get("HYDRA_FULL_ERROR") == "1":
                    raise
                message = str(exc).split("Config search path:")[0]  # where it looked: noise
                if isinstance(exc.__cause__, OmegaConfBaseException):
                    message += ": " + str(exc.__cause__).splitlines()[0]
                fail(message, logger=logger)

        return original(composed)

    run_and_report.maple_one_line = True  # type: ignore[attr-defined]
    utils.run_and_report = run_and_report
