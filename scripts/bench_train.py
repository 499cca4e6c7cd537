#!/usr/bin/env python
"""Training throughput vs env-only throughput on the same envs, side by side, as JSON.

    python scripts/bench_train.py                 # +experiment=lstm_ppo, device=cpu
    python scripts/bench_train.py --rounds 3 --iterations 2 -- env.num_envs=8 algo.bptt=32

One vector env is built from the experiment's config and used for both measurements,
interleaved in ``--rounds`` rounds: (a) env-only: random legal actions for as many vector
steps as ``--iterations`` rollouts, (b) training: ``--iterations`` full iterations (rollout
with the batched policy + GAE + PPO update). SPS counts env steps (vector steps x num_envs)
per wall-clock second. ``ratio = median train SPS / median env-only SPS`` (goal >= 0.85 on
CPU). One warm-up iteration runs first and is not counted. Each round also records the CPU
ms per env step by process role (``main``: this process; ``node``: simulator hosts or
servers; ``workers``: the other descendants, env workers) for env-only and for training.
Prints one JSON object.

A/B against another checkout, side by side on the same machine:

    python scripts/bench_train.py --baseline main --pairs 3 --experiment attention_ppo

``--baseline`` takes a commit (checked out in a temporary ``git worktree``, removed at the
end) or a checkout directory. Both sides run their own ``scripts/bench_train.py`` in a
subprocess (same python, experiment, overrides, rounds, iterations), alternated A B A B
for ``--pairs`` pairs (A = this checkout). ``speedup = median A train SPS / median B train
SPS`` over all rounds; ``median_pair_speedup`` is the median of the per-pair ratios.
``--baseline . --a-override env.battles_per_worker=4`` compares settings of one checkout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import psutil
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from mapleenv.measure import machine_info, process_cpu, process_role
from trainer.config import to_run_config
from trainer.run.train import Trainer

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO / "scripts"))  # the shared _cli (last)
from _cli import print_json, script_parser  # noqa: E402


def cpu_ms_per_step(before: dict[str, float], steps: int) -> dict[str, float]:
    """CPU ms per env step by process role since ``before`` (a ``process_cpu()``)."""
    after = process_cpu()
    per_step = {role: 1e3 * (after[role] - before[role]) / max(steps, 1) for role in before}
    per_step["total"] = sum(per_step.values())
    return {role: round(ms, 3) for role, ms in per_step.items()}


def env_only_sps(trainer: Trainer, vector_steps: int, rng: np.random.Generator) -> float:
    """Random legal actions on the trainer's envs; leaves the collector in sync."""
    envs, adapter = trainer.envs, trainer.adapter
    mask = trainer.collector.mask_np
    obs = None
    start = time.perf_counter()
    for _ in range(vector_steps):
        scores = rng.random(mask.shape) * mask  # uniform over legal actions
        obs, *_ = envs.step(scores.argmax(axis=1))
        _, mask = adapter.batch(obs)
    elapsed = time.perf_counter() - start
    trainer.collector.restart_from(obs)
    return vector_steps * envs.num_envs / elapsed


def measure_round(trainer: Trainer, args: argparse.Namespace, rng: np.random.Generator) -> dict:
    """One env-only slice then ``--iterations`` training iterations: SPS, times, CPU."""
    vector_steps = trainer.cfg.algo.rollout_steps * args.iterations
    steps = vector_steps * trainer.envs.num_envs
    cpu0 = process_cpu()
    env_sps = env_only_sps(trainer, vector_steps, rng)
    env_cpu = cpu_ms_per_step(cpu0, steps)
    rows = []
    cpu0 = process_cpu()
    start = time.perf_counter()
    for _ in range(args.iterations):
        rows.append(trainer.train_iteration())
    train_sps = steps / (time.perf_counter() - start)
    return {
        "env_only_sps": env_sps,
        "train_sps": train_sps,
        "ratio": train_sps / env_sps,
        "rollout_s": sum(r["rollout_s"] for r in rows),
        "update_s": sum(r["update_s"] for r in rows),
        "env_only_cpu_ms_per_step": env_cpu,
        "train_cpu_ms_per_step": cpu_ms_per_step(cpu0, steps),
    }


def median_by_role(rounds: list[dict], key: str) -> dict[str, float]:
    """Per-role medians of the rounds' ``key`` CPU records."""
    roles = rounds[0][key]
    return {role: round(statistics.median(r[key][role] for r in rounds), 3) for role in roles}


def rss_mib_by_role() -> dict[str, float]:
    """RSS (MiB) of this process, its env workers and simulator hosts (sums); worker count."""
    rss = {"main": psutil.Process().memory_info().rss / 2**20, "env_workers": 0.0}
    rss |= {"sim_hosts": 0.0, "workers": 0}  # fmt: skip
    for child in psutil.Process().children(recursive=True):
        role = process_role(child, os.getpid())
        key = {"env_worker": "env_workers", "sim_host": "sim_hosts"}.get(role or "")
        if key is not None:
            with contextlib.suppress(psutil.Error):
                rss[key] += child.memory_info().rss / 2**20
                rss["workers"] += key == "env_workers"
    return {k: round(v, 1) for k, v in rss.items()}


def single(args: argparse.Namespace) -> dict:
    """This checkout's env-only and training SPS, interleaved on one vector env."""
    overrides = [
        f"+experiment={args.experiment}",
        f"device={args.device}",
        "tensorboard=false",
        *args.overrides,
    ]
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    typed, spec = to_run_config(cfg)  # the spec checked once, as the CLI does
    run_dir = Path(tempfile.mkdtemp(prefix="maple_bench_train_"))
    trainer = Trainer(typed, run_dir, OmegaConf.to_container(cfg, resolve=True), spec=spec)
    rng = np.random.default_rng(0)
    try:
        trainer.train_iteration()  # warm-up: server, workers, allocator
        rounds = [measure_round(trainer, args, rng) for _ in range(args.rounds)]
        rss = rss_mib_by_role()
    finally:
        trainer.close()
        shutil.rmtree(run_dir, ignore_errors=True)
    env_med = statistics.median(r["env_only_sps"] for r in rounds)
    train_med = statistics.median(r["train_sps"] for r in rounds)
    return {
        "experiment": args.experiment,
        "overrides": args.overrides,
        "device": str(trainer.device),
        "num_envs": typed.env.num_envs,
        "rollout_steps": typed.algo.rollout_steps,
        "bptt": typed.algo.bptt,
        "env": OmegaConf.to_container(cfg.env, resolve=True),
        "torch_threads": trainer.rollout_threads,
        "torch_update_threads": trainer.update_threads,
        "rounds": rounds,
        "env_only_sps_median": env_med,
        "train_sps_median": train_med,
        "ratio": train_med / env_med,
        "median_round_ratio": statistics.median(r["ratio"] for r in rounds),
        "update_share": statistics.median(
            r["update_s"] / (r["update_s"] + r["rollout_s"]) for r in rounds
        ),
        "env_only_cpu_ms_per_step": median_by_role(rounds, "env_only_cpu_ms_per_step"),
        "train_cpu_ms_per_step": median_by_role(rounds, "train_cpu_ms_per_step"),
        "rss_mib": rss,
        "machine": {
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "loadavg": os.getloadavg(),
            "torch": torch.__version__,
        },
    }


# -- A/B against another checkout (--baseline)


def git(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def fail(message: str) -> None:
    """A one-line error for the user, exit status 2."""
    print(f"bench_train.py: {message}", file=sys.stderr)
    sys.exit(2)


def checkout_rev(path: Path) -> dict:
    """The commit a checkout is at and whether its working tree has changes."""
    head = git("rev-parse", "HEAD", cwd=path)
    if head.returncode != 0:
        return {"rev": None, "dirty": None}
    dirty = bool(git("status", "--porcelain", "--untracked-files=no", cwd=path).stdout.strip())
    return {"rev": head.stdout.strip(), "dirty": dirty}


@contextlib.contextmanager
def baseline_checkout(spec: str, tmp: Path) -> Iterator[Path]:
    """The baseline's checkout: ``spec`` if it is a directory, else a temporary detached
    ``git worktree`` of the commit ``spec`` (with this checkout's ``node_modules``),
    removed on the way out, errors and interrupts included."""
    if Path(spec).is_dir():
        path = Path(spec).resolve()
        if not (path / "scripts" / "bench_train.py").is_file():
            fail(f"--baseline {spec}: not a Maple checkout (no scripts/bench_train.py)")
        yield path
        return
    if git("rev-parse", "--git-dir").returncode != 0:
        fail(f"{REPO} is not a git repository: give --baseline a checkout directory")
    rev = git("rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}")
    if rev.returncode != 0:
        fail(f"--baseline {spec}: unknown revision and not a directory")
    path = tmp / "baseline"
    added = git("worktree", "add", "--detach", str(path), rev.stdout.strip())
    if added.returncode != 0:
        fail(f"git worktree add failed: {added.stderr.strip().splitlines()[-1:]}")
    try:
        if (REPO / "node_modules").exists() and not (path / "node_modules").exists():
            (path / "node_modules").symlink_to((REPO / "node_modules").resolve())
        yield path
    finally:
        git("worktree", "remove", "--force", str(path))
        git("worktree", "prune")


def last_json(stdout: str) -> dict:
    """The last JSON object a bench_train.py printed (indented, after any other output)."""
    decoder = json.JSONDecoder()
    starts = [
        i for i in range(len(stdout)) if stdout[i] == "{" and (i == 0 or stdout[i - 1] == "\n")
    ]
    for start in reversed(starts):
        with contextlib.suppress(json.JSONDecodeError):
            return decoder.raw_decode(stdout, start)[0]
    raise ValueError("no JSON object in its output")


def run_side(checkout: Path, args: argparse.Namespace, tmp: Path, label: str) -> dict:
    """One run of ``checkout``'s own bench_train.py (its code on PYTHONPATH); its JSON.
    Side A adds ``--a-override``s to the overrides."""
    extra = args.a_override if label == "A" else []
    command = [
        sys.executable,
        str(checkout / "scripts" / "bench_train.py"),
        f"--experiment={args.experiment}",
        f"--device={args.device}",
        f"--rounds={args.rounds}",
        f"--iterations={args.iterations}",
        "--",
        *args.overrides,
        *extra,
    ]
    (tmp / "tmp").mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(checkout), "TMPDIR": str(tmp / "tmp")}
    loadavg = list(os.getloadavg())
    with open(tmp / "stderr.log", "w+") as stderr:
        proc = subprocess.Popen(
            command,
            cwd=checkout,
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            start_new_session=True,  # Ctrl-C reaches this process; stop() passes it on
        )
        try:
            stdout, _ = proc.communicate()
        finally:
            stop(proc)
        stderr.seek(0)
        tail = stderr.read().strip().splitlines()[-15:]
    try:
        if proc.returncode != 0:
            raise ValueError(f"exit status {proc.returncode}")
        result = last_json(stdout)
    except ValueError as exc:
        print("\n".join(tail), file=sys.stderr)
        fail(f"the {label} side's bench_train.py failed ({exc}; its stderr's end above)")
    result["loadavg_before"] = loadavg
    return result


def stop(proc: subprocess.Popen) -> None:
    """Interrupt a run still going (its trainer closes its envs); terminate it, then kill
    it, if it does not end."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        if proc.poll() is not None:
            return
        proc.send_signal(sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)


RUN_KEYS = ("train_sps_median", "env_only_sps_median", "ratio", "update_share")
RUN_KEYS += ("loadavg_before", "rss_mib")
ROUND_KEYS = (
    "train_sps",
    "env_only_sps",
    "rollout_s",
    "update_s",
    "train_cpu_ms_per_step",
    "env_only_cpu_ms_per_step",
)


def side_summary(checkout: Path, runs: list[dict]) -> dict:
    """One side's runs, its per-round SPS over all runs and their medians."""
    rounds = [r for run in runs for r in run["rounds"]]
    train = [r["train_sps"] for r in rounds]
    env = [r["env_only_sps"] for r in rounds]
    cpu = [r for r in rounds if "train_cpu_ms_per_step" in r]
    return {
        "checkout": str(checkout),
        **checkout_rev(checkout),
        "num_envs": runs[0].get("num_envs"),
        "device": runs[0].get("device"),
        "train_sps": train,
        "env_only_sps": env,
        "train_sps_median": statistics.median(train),
        "env_only_sps_median": statistics.median(env),
        "train_cpu_ms_per_step": median_by_role(cpu, "train_cpu_ms_per_step") if cpu else None,
        "env_only_cpu_ms_per_step": (
            median_by_role(cpu, "env_only_cpu_ms_per_step") if cpu else None
        ),
        "env_workers_rss_mib_median": _median_rss(runs, "env_workers"),
        "runs": [
            {
                **{k: run.get(k) for k in RUN_KEYS},
                "rounds": [{k: r[k] for k in ROUND_KEYS if k in r} for r in run["rounds"]],
            }
            for run in runs
        ],
    }


def _median_rss(runs: list[dict], key: str) -> float | None:
    return statistics.median([r["rss_mib"][key] for r in runs]) if runs[0].get("rss_mib") else None


def _ratio(a: dict, b: dict, key: str) -> float | None:
    return a[key] / b[key] if a.get(key) and b.get(key) else None


def compare(args: argparse.Namespace) -> dict:
    """A (this checkout) and B (the baseline) alternated A B A B; both sides and the speedup."""
    # Ctrl-C interrupts this process (even started with SIGINT ignored, as in the
    # background of a script), and the runs start with it (stop() sends it)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    machine = machine_info()
    tmp = Path(tempfile.mkdtemp(prefix="maple_bench_ab_"))
    runs: dict[str, list[dict]] = {"a": [], "b": []}
    try:
        with baseline_checkout(args.baseline, tmp) as baseline:
            checkouts = {"a": REPO, "b": baseline}
            for pair in range(args.pairs):
                for side in ("a", "b"):
                    run = run_side(checkouts[side], args, tmp, side.upper())
                    runs[side].append(run)
                    print(
                        f"pair {pair + 1}/{args.pairs} {side.upper()}: "
                        f"train {run['train_sps_median']:.1f} SPS, "
                        f"env-only {run['env_only_sps_median']:.1f}",
                        file=sys.stderr,
                        flush=True,
                    )
            a, b = side_summary(REPO, runs["a"]), side_summary(baseline, runs["b"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    pair_speedups = [
        ra["train_sps_median"] / rb["train_sps_median"]
        for ra, rb in zip(runs["a"], runs["b"], strict=True)
    ]
    return {
        "mode": "baseline",
        "baseline": args.baseline,
        "experiment": args.experiment,
        "overrides": args.overrides,
        "a_overrides": args.a_override,
        "device": args.device,
        "pairs": args.pairs,
        "rounds_per_run": args.rounds,
        "iterations": args.iterations,
        "a": a,
        "b": b,
        "speedup": a["train_sps_median"] / b["train_sps_median"],
        "median_pair_speedup": statistics.median(pair_speedups),
        "pair_speedups": pair_speedups,
        "env_only_speedup": a["env_only_sps_median"] / b["env_only_sps_median"],
        "env_workers_rss_ratio": _ratio(a, b, "env_workers_rss_mib_median"),
        "machine": machine,
        "loadavg_end": list(os.getloadavg()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument(
        "--experiment", default="lstm_ppo", help="the +experiment to build (default %(default)s)"
    )
    parser.add_argument(
        "--device", default="cpu", help="cpu | cuda | mps | auto (default %(default)s)"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="interleaved env-only/training rounds, medians reported (default %(default)s; "
        "with --baseline: per run)",
    )
    parser.add_argument(
        "--iterations", type=int, default=2, help="rollouts per round (default %(default)s)"
    )
    parser.add_argument(
        "--baseline",
        metavar="REV_OR_DIR",
        help="A/B this checkout against a commit or a checkout directory (see above)",
    )
    parser.add_argument(
        "--pairs", type=int, default=3, help="with --baseline: A B pairs run (default %(default)s)"
    )
    parser.add_argument(
        "--a-override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="with --baseline: a Hydra override for side A only (repeatable); with "
        "--baseline . both sides are this checkout: an A/B of settings",
    )
    parser.add_argument("overrides", nargs="*", help="extra Hydra overrides (after --)")
    args = parser.parse_args(argv)
    if min(args.rounds, args.iterations, args.pairs) < 1:
        parser.error("--rounds, --iterations and --pairs must be >= 1")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run cleanups on kill
    try:
        result = compare(args) if args.baseline is not None else single(args)
    except KeyboardInterrupt:
        print("bench_train.py: interrupted", file=sys.stderr)
        return 130
    print_json(result, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
