"""Shared pytest fixtures.

``showdown_server`` is one real Showdown server for the whole test session (started on
first use, stopped at the end); integration tests take it as a fixture and mark
themselves ``@pytest.mark.integration``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from mapleenv.server import ShowdownServer


@pytest.fixture(scope="session")
def showdown_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShowdownServer]:
    """A running :class:`~mapleenv.server.ShowdownServer` shared by the session."""
    server = ShowdownServer(log_dir=tmp_path_factory.mktemp("showdown"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def child_node_pids(parent: int | None = None) -> list[int]:
    """PIDs of live ``node`` processes whose parent is ``parent`` (default: this process)."""
    parent = os.getpid() if parent is None else parent
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
        if comm == "node" and int(ppid) == parent and state != "Z":
            pids.append(int(entry.name))
    return pids


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"
