"""A training run seen from outside, while it runs or after it: its metrics rows, last
iteration and checkpoint, its processes by role and its simulator socket dirs. Operator
tools (``scripts/stress/chaos.py``, ``scripts/stress/soak.py``) watch a run through these."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import psutil

from mapleenv.measure import process_role
from trainer.run.curves import read_metrics

SIM_DIR_PREFIX = "maple-sim-"  # the direct backend's host-pool socket dirs (in the temp dir)


def metrics_rows(run_dir: Path) -> list[dict[str, str]]:
    """The run's ``metrics.csv`` rows (none yet: empty)."""
    try:
        return read_metrics(run_dir)
    except OSError:
        return []


def last_iteration(run_dir: Path) -> int:
    """The last iteration ``metrics.csv`` logged (0: none)."""
    rows = metrics_rows(run_dir)
    try:
        return int(rows[-1]["iteration"]) if rows else 0
    except (KeyError, ValueError):
        return 0


def check_checkpoint(run_dir: Path) -> dict[str, Any]:
    """Load ``last.pt`` and rebuild its policy: its global_step and iteration, or the error."""
    from mapleenv.policies import policy_from_snapshot
    from trainer.run.checkpoint import load_checkpoint

    try:
        ckpt = load_checkpoint(run_dir)
        policy_from_snapshot(ckpt)
    except Exception as exc:  # reported by the caller: a failed check, not a crash
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    return {
        "ok": True,
        "global_step": int(ckpt["global_step"]),
        "iteration": int(ckpt["iteration"]),
    }


def alive(process: psutil.Process) -> bool:
    """Running (the same process, not a reused pid) and not a zombie."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def processes_by_role(trainer_pid: int) -> dict[str, list[psutil.Process]]:
    """The run's processes by role (``mapleenv.measure.process_role``): ``trainer``,
    ``env_worker``, ``sim_host``, ``server``, ``node`` (stopped ones included, zombies not)."""
    out: dict[str, list[psutil.Process]] = {}
    try:
        trainer = psutil.Process(trainer_pid)
        found = [trainer, *trainer.children(recursive=True)]
    except psutil.Error:
        return out
    for process in found:
        kind = process_role(process, trainer_pid)
        try:
            if kind is None or process.status() == psutil.STATUS_ZOMBIE:
                continue
        except psutil.Error:
            continue
        out.setdefault(kind, []).append(process)
    return out


def sim_dirs_of(pids: set[int]) -> set[Path]:
    """Simulator socket dirs (``maple-sim-*``) made by one of ``pids``."""
    out = set()
    for directory in Path(tempfile.gettempdir()).glob(f"{SIM_DIR_PREFIX}*"):
        try:
            owner = int((directory / "owner").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        if owner in pids:
            out.add(directory)
    return out


def left_running(
    seen: list[psutil.Process], marks: list[str], wait_s: float = 30.0
) -> list[dict[str, Any]]:
    """Processes of a run still running after its end (``seen`` ones waited for up to
    ``wait_s``), and any process whose command line names one of ``marks`` (its run dir,
    its socket dirs: one started between two looks), less this process and its parents."""
    _, still = psutil.wait_procs([p for p in seen if alive(p)], timeout=wait_s)
    me = {psutil.Process().pid, *(p.pid for p in psutil.Process().parents())}
    for process in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(process.info["cmdline"] or ())
        if process.pid not in me and any(mark in cmdline for mark in marks):
            still.append(process)
    left = {}
    for process in still:
        if alive(process):
            try:
                left[process.pid] = " ".join(process.cmdline())[:200]
            except psutil.Error:
                continue
    return [{"pid": pid, "cmdline": cmdline} for pid, cmdline in sorted(left.items())]
