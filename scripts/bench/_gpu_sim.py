"""The GPU check's ``sim`` part, a helper of scripts/bench/gpu_check.py (not a script): the
recipe on the direct backend at each ``--envs`` count, training and env-only slices
alternated, with CPU per env step by process role, memory per process and which processes
hold a context on the GPU."""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import psutil
import torch
from bench_train import cpu_ms_per_step, env_only_sps

from mapleenv.measure import cuda_libraries, gpu_context_pids, process_cpu, process_role
from trainer.run.train import Trainer


def simulator_missing() -> str | None:
    from mapleenv.showdown import find_node, find_showdown

    try:
        find_node()
        find_showdown()
    except Exception as exc:  # NodeNotFoundError, ShowdownNotInstalledError
        return f"{type(exc).__name__}: {exc}"
    return None


def processes_by_role() -> dict[str, list[psutil.Process]]:
    roles: dict[str, list[psutil.Process]] = {}
    for child in psutil.Process().children(recursive=True):
        role = process_role(child, os.getpid())
        if role is not None:
            roles.setdefault(role, []).append(child)
    return roles


def rss_mib(processes: list[psutil.Process]) -> list[float]:
    out = []
    for p in processes:
        with contextlib.suppress(psutil.Error):
            out.append(round(p.memory_info().rss / 2**20, 1))
    return out


def sim_rounds(trainer: Trainer, seconds: float) -> list[dict]:
    """Env-only and training slices alternated until ``seconds`` passed (one at least)."""
    rng = np.random.default_rng(0)
    rounds, begin = [], time.monotonic()
    vector_steps = trainer.cfg.algo.rollout_steps
    steps = vector_steps * trainer.envs.num_envs
    while not rounds or time.monotonic() - begin < seconds:
        cpu0 = process_cpu()
        env_sps = env_only_sps(trainer, vector_steps, rng)
        env_cpu = cpu_ms_per_step(cpu0, steps)
        cpu0 = process_cpu()
        row = trainer.train_iteration()
        train_cpu = cpu_ms_per_step(cpu0, steps)
        keys = ("env_only_sps", "train_sps", "update_s", "env_only_cpu_ms_per_step")
        values = (env_sps, row["sps"], row["update_s"], env_cpu)
        rounds.append({**dict(zip(keys, values, strict=True)), "train_cpu_ms_per_step": train_cpu})
    return rounds


def sim_one(
    args: argparse.Namespace, device: torch.device, n: int, tmp: Path, make_trainer: Callable
) -> dict:
    overrides = [f"+experiment={args.experiment}", f"device={device}", f"env.num_envs={n}"]
    if args.quick:
        overrides += ["algo.rollout_steps=16", "algo.epochs=1"]
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    trainer = make_trainer([*overrides, *args.overrides], tmp / f"sim{n}")
    try:
        trainer.train_iteration()  # warm-up: hosts, workers, allocator
        rounds = sim_rounds(trainer, args.sim_seconds)
        roles = processes_by_role()
        workers = roles.get("env_worker", [])
        result = {"num_envs": n, "overrides": overrides[3:] + args.overrides, "rounds": len(rounds)}
        for key in ("train_sps", "env_only_sps", "update_s"):
            result[f"{key}_median"] = round(statistics.median(r[key] for r in rounds), 3)
        for key in ("env_only_cpu_ms_per_step", "train_cpu_ms_per_step"):
            result[key] = {
                role: round(statistics.median(r[key][role] for r in rounds), 3)
                for role in rounds[0][key]
            }
        result |= {
            "env_workers": len(workers),
            "rss_mib_env_workers": rss_mib(workers),
            "rss_mib_sim_hosts": rss_mib(roles.get("sim_host", [])),
            "cuda_libraries_in_workers": sorted(
                {n for p in workers for n in cuda_libraries(p.pid)}
            ),
        }
        contexts = gpu_context_pids() if device.type == "cuda" else []
        result["gpu_context_pids"] = contexts
        result["cuda_in_workers"] = [p.pid for p in workers if p.pid in (contexts or [])]
        if device.type == "cuda":
            result["gpu_max_allocated_mib"] = round(torch.cuda.max_memory_allocated() / 2**20)
            result["gpu_max_reserved_mib"] = round(torch.cuda.max_memory_reserved() / 2**20)
            result["main_has_gpu_context"] = None if contexts is None else os.getpid() in contexts
        return result
    finally:
        trainer.close()


def part_sim(
    args: argparse.Namespace, device: torch.device, tmp: Path, make_trainer: Callable
) -> dict:
    missing = simulator_missing()
    if missing is not None:
        return {"skipped": f"no simulator: {missing}", "ok": True}
    runs = [sim_one(args, device, n, tmp, make_trainer) for n in args.envs]
    return {"runs": runs, "ok": all(not r["cuda_in_workers"] for r in runs)}
