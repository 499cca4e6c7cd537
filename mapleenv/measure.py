"""Measuring Maple's processes, for benchmarks, profiles, soaks and fault injection: the
machine, the pinned simulator's own speed (``js/sim_ceiling.js``, the ceiling an env is
compared with), the CPU time of a process tree and which Maple process is which."""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

if TYPE_CHECKING:
    from mapleenv.showdown.child import NodeChild

SIM_CEILING_JS = Path(__file__).resolve().parent / "js" / "sim_ceiling.js"


def machine_info() -> dict[str, Any]:
    """CPU model, core count, load and tool versions, for the JSON record."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        node = None
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "node": node,
        "loadavg": list(os.getloadavg()),
    }


class Ceiling:
    """``procs`` long-lived ``sim_ceiling.js --serve`` processes (their JIT stays warm
    between measurements; they play nothing in between)."""

    def __init__(self, procs: int, battle_format: str = "gen9randombattle", warmup: float = 5.0):
        from mapleenv.showdown import find_node, find_showdown
        from mapleenv.showdown.child import NodeChild

        node = find_node()
        root = find_showdown().parent.parent  # the folder holding node_modules/
        cmd = [node, str(SIM_CEILING_JS), "--serve", "--format", battle_format]
        self.procs: list[NodeChild] = []
        try:
            for _ in range(procs):
                self.procs.append(NodeChild(cmd, name="sim_ceiling.js", cwd=root))
            if warmup > 0:
                self.measure(warmup)
        except BaseException:
            self.close()
            raise

    def measure(self, seconds: float) -> dict[str, Any]:
        """All processes at once for ``seconds``; total turns/s and CPU ms per turn."""
        for proc in self.procs:
            proc.write(f"measure {seconds}\n".encode())
        deadline = 2 * seconds + 60  # a process that hangs: an error, not a wait forever
        results = [json.loads(proc.reader.line(deadline)) for proc in self.procs]
        return {
            "sim_turns_per_s": sum(r["turns_per_s"] for r in results),
            "sim_cpu_ms_per_turn": 1e3
            * sum(r["cpu_s"] for r in results)
            / max(1, sum(r["turns"] for r in results)),
            "sim_procs": len(self.procs),
            "sim_turns_per_s_each": [round(r["turns_per_s"], 1) for r in results],
        }

    def close(self) -> None:
        for proc in self.procs:
            proc.close()


def sim_ceiling(
    seconds: float, procs: int, warmup: float = 2.0, battle_format: str = "gen9randombattle"
) -> dict[str, Any]:
    """One ceiling measurement: ``procs`` processes, ``warmup`` s, then ``seconds`` s."""
    ceiling = Ceiling(procs, battle_format, warmup)
    try:
        return ceiling.measure(seconds)
    finally:
        ceiling.close()


def process_cpu(exclude: Collection[int] = ()) -> dict[str, float]:
    """CPU seconds used so far: this process (all threads), its live ``node`` descendants
    (simulator hosts, servers) and its other live descendants (env workers), leaving out
    the descendants in ``exclude`` (another env's, idle beside the measured one)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"main": usage.ru_utime + usage.ru_stime, **descendants_cpu_by_kind(exclude=exclude)}


def descendants_cpu_by_kind(
    root: int | None = None, exclude: Collection[int] = ()
) -> dict[str, float]:
    """CPU seconds of the live descendants of ``root`` (default: this process) not in
    ``exclude``, split into ``node`` processes and ``workers`` (everything else)."""
    totals = {"node": 0.0, "workers": 0.0}
    try:
        children = psutil.Process(root).children(recursive=True)
    except psutil.NoSuchProcess:
        return totals
    for child in children:
        if child.pid in exclude:
            continue
        try:
            times = child.cpu_times()
            kind = "node" if child.name() == "node" else "workers"
        except psutil.Error:
            continue
        totals[kind] += times.user + times.system
    return totals


def descendants_cpu(root: int | None = None) -> float:
    """CPU seconds used so far by the live descendants of ``root`` (default: this process)."""
    return sum(descendants_cpu_by_kind(root).values())


def process_role(process: psutil.Process, trainer_pid: int) -> str | None:
    """``trainer``, ``env_worker``, ``sim_host`` (a direct-backend simulator host),
    ``server`` (a Showdown server), ``node`` (another Node process) or None (helpers such
    as the resource tracker)."""
    if process.pid == trainer_pid:
        return "trainer"
    try:
        name, cmdline = process.name(), process.cmdline()
    except psutil.Error:
        return None
    if name == "node":
        if any(part.endswith("sim_host.js") for part in cmdline):
            return "sim_host"
        return "server" if "pokemon-showdown" in cmdline else "node"
    joined = " ".join(cmdline)
    if "spawn_main" in joined and "resource_tracker" not in joined:
        return "env_worker"
    return None


def cuda_libraries(pid: int) -> list[str]:
    """The CUDA driver libraries (``libcuda``, ``libnvidia-ml``) process ``pid`` mapped: a
    report, not proof of GPU use (a CUDA build of torch maps ``libcuda`` at import)."""
    try:
        lines = Path(f"/proc/{pid}/maps").read_text().splitlines()
    except OSError:
        return []
    names = {Path(line.split()[-1]).name for line in lines if "/" in line}
    return sorted(n for n in names if n.startswith(("libcuda.so", "libnvidia-ml")))


def gpu_context_pids() -> list[int] | None:
    """The processes holding a context on a GPU as the driver lists them (``nvidia-smi``);
    None where there is no nvidia-smi. The authority on whether a process touched the GPU."""
    cmd = ["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return sorted(int(x) for x in out.split() if x.isdigit())
