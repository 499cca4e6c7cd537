"""The unit tier's process guard (tests/process_guard.py) blocks and records every start."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import subprocess
import sys

import pytest
from process_guard import GUARD, ProcessStartBlocked


def _starters() -> dict[str, object]:
    def asyncio_exec() -> None:
        async def go() -> None:
            await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")

        asyncio.run(go())

    return {
        "subprocess.run": lambda: subprocess.run([sys.executable, "-c", "pass"], check=False),
        "os.system": lambda: os.system("true"),
        "os.fork": os.fork,
        "os.posix_spawn": lambda: os.posix_spawn("/bin/true", ["true"], {}),
        "multiprocessing": lambda: multiprocessing.get_context("spawn").Process(target=int).start(),
        "asyncio": asyncio_exec,
    }


@pytest.mark.parametrize("name", list(_starters()))
def test_a_unit_test_cannot_start_a_process(name: str) -> None:
    with pytest.raises(ProcessStartBlocked, match="mark the test @pytest.mark.integration"):
        _starters()[name]()
    assert GUARD.attempts, "the attempt was not recorded"
    GUARD.attempts.clear()  # this test meant to try; the check after the call passes


def test_a_swallowed_attempt_is_still_recorded() -> None:
    with contextlib.suppress(Exception):  # code under test that hides the error
        subprocess.run(["true"], check=False)
    assert GUARD.attempts == ["subprocess(['true'])"]
    GUARD.attempts.clear()
