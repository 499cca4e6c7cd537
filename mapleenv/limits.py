"""How many env workers, servers and simulator hosts this machine can hold: a guard
against a typo (``num_envs=1000000``) starting a million processes (docs/security.md)."""

from __future__ import annotations

import os

import psutil

PROCESSES_PER_CORE = 32  # generous: Maple's own runs use 4-8 envs per core
MEMORY_PER_PROCESS = 64 << 20  # bytes; an env worker or Node process holds ~100-250 MiB


class CapacityError(ValueError):
    """More processes asked for than the machine can hold (one line, names the override)."""


def cpu_cores() -> int:
    """CPU cores this process may run on (its affinity where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def capacity() -> tuple[int, int, int]:
    """(processes this machine holds, its CPU cores, its available memory in bytes): the
    smaller of :data:`PROCESSES_PER_CORE` per core and available memory over
    :data:`MEMORY_PER_PROCESS`."""
    cores = cpu_cores()
    available = int(psutil.virtual_memory().available)
    return (
        max(1, min(PROCESSES_PER_CORE * cores, available // MEMORY_PER_PROCESS)),
        cores,
        available,
    )


def check_capacity(
    num_envs: int,
    *,
    servers: int = 0,
    sim_hosts: int = 0,
    allow_oversubscribe: bool = False,
    what: str = "num_envs",
    override: str = "allow_oversubscribe=True",
) -> None:
    """:class:`CapacityError` if ``num_envs`` env workers plus ``servers`` Showdown servers
    plus ``sim_hosts`` simulator hosts exceed :func:`capacity`, unless
    ``allow_oversubscribe``. ``what`` and ``override`` are the caller's names for the count
    and the way out, for the message."""
    wanted = int(num_envs) + int(servers) + int(sim_hosts)
    if allow_oversubscribe:
        return
    limit, cores, available = capacity()
    if wanted <= limit:
        return
    extra = [
        f"{n} {kind}" for n, kind in ((servers, "server(s)"), (sim_hosts, "simulator host(s)")) if n
    ]
    plus = f" (+ {', '.join(extra)})" if extra else ""
    raise CapacityError(
        f"{what}={num_envs}{plus} would start {wanted} processes; this machine holds about "
        f"{limit} ({cores} CPU core(s), {available / (1 << 30):.1f} GiB memory available); "
        f"lower it, or set {override} to start them anyway"
    )
