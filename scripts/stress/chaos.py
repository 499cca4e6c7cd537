#!/usr/bin/env python
"""Chaos run: train while killing and stopping Maple's processes at random times; JSON.

    python scripts/stress/chaos.py --minutes 30 --backend direct --sim-hosts 2 -- env.num_envs=8
    python scripts/stress/chaos.py --minutes 30 --backend server -- env.num_envs=8 env.servers=2

Starts ``python -m trainer +experiment=<--experiment> env.backend=<--backend> ...`` (a real
run, in a temporary run dir unless ``--run-dir`` is given) and injects faults at random
times (a Poisson process of ``--faults-per-minute``, seeded by ``--seed``; kinds drawn from
a shuffled bag of the ``--kinds``, so four faults in a row are one of each): ``kill_simulator`` /
``stop_simulator`` (SIGKILL / SIGSTOP of a simulator host or Showdown server, left stopped:
the pool's health check must act) and ``kill_worker`` / ``stop_worker`` (an env worker).
Every fault must be recovered in the same run: the victim gone and a new process of its
kind running (a simulator host or server restarted by its pool's watchdog, an env worker
replaced within the step by the vector env, ``mapleenv.vector.heal``), the run never
stopping. When the time is up the run is stopped with SIGTERM (it saves) and checked: a
clean stop, loadable checkpoints whose global_step never went back, metrics.csv without
duplicate iterations, no process or simulator socket dir left. Progress goes to stderr;
the exit code is 1 when a check failed. Faults are only injected while the run is training
(it logged and saved an iteration), so a fault never hits a run while it starts.
"""

from __future__ import annotations

import argparse
import math
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from trainer.run.probe import (
    alive,
    check_checkpoint,
    last_iteration,
    left_running,
    metrics_rows,
    processes_by_role,
    sim_dirs_of,
)

sys.path.append(str(Path(__file__).resolve().parents[1]))  # scripts/: the shared _cli (last)
from _cli import print_json, script_parser  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
KINDS = ("kill_simulator", "stop_simulator", "kill_worker", "stop_worker")


@dataclass
class Fault:
    """One injected fault and what became of it."""

    kind: str
    role: str
    pid: int
    segment: int
    t: float  # seconds since the chaos run started
    outcome: str = "pending"  # recovered | unrecovered | interrupted
    recovered_s: float | None = None
    new_pid: int | None = None
    victim: Any = field(default=None, repr=False)
    before: set[int] = field(default_factory=set, repr=False)  # same-role pids at the fault


# the JSON fields of a fault event
EVENT_FIELDS = (
    "kind", "role", "pid", "segment", "t", "outcome", "recovered_s", "new_pid",
)  # fmt: skip


@dataclass
class Segment:
    """The trainer process of the run."""

    index: int
    proc: subprocess.Popen
    log: Path
    start_iteration: int
    started: float  # seconds since the chaos run started
    started_wall: float  # time.time() then
    under_way: bool = False
    exit_code: int | None = None
    end: str = "running"  # finished | sigterm | failed
    checkpoint: dict[str, Any] | None = None
    metrics_iteration: int | None = None  # the last iteration in metrics.csv at the end


class Chaos:
    """The chaos run: its segments, its faults and every process seen below a trainer."""

    def __init__(self, args: argparse.Namespace, command: list[str], run_dir: Path):
        self.args, self.command, self.run_dir = args, command, run_dir
        self.rng = random.Random(args.seed)
        self.bag: list[str] = []
        self.start = time.monotonic()
        self.faults: list[Fault] = []
        self.segments: list[Segment] = []
        self.seen: dict[tuple[int, float], psutil.Process] = {}
        self.trainer_pids: set[int] = set()
        self.sim_dirs: set[Path] = set()
        self.claimed: set[int] = set()  # new simulator pids already credited to a recovery

    # -- progress
    def now(self) -> float:
        return time.monotonic() - self.start

    def say(self, message: str) -> None:
        print(f"[{self.now():7.1f} s] {message}", file=sys.stderr, flush=True)

    # -- segments
    def start_segment(self) -> Segment:
        index = len(self.segments)
        log = self.run_dir / "chaos" / f"segment-{index}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        command = list(self.command)
        with log.open("wb") as out:
            proc = subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
        segment = Segment(index, proc, log, last_iteration(self.run_dir), self.now(), time.time())
        self.segments.append(segment)
        self.trainer_pids.add(proc.pid)
        self.say(f"segment {index}: started run (pid {proc.pid})")
        return segment

    def track(self, segment: Segment) -> dict[str, list[psutil.Process]]:
        found = processes_by_role(segment.proc.pid)
        for group in found.values():
            for process in group:
                try:
                    self.seen.setdefault((process.pid, process.create_time()), process)
                except psutil.Error:
                    continue
        self.sim_dirs |= sim_dirs_of(self.trainer_pids)
        if not segment.under_way and self.checkpointed(segment):
            segment.under_way = True
            self.say(f"segment {segment.index}: training")
        return found

    def checkpointed(self, segment: Segment) -> bool:
        """Whether ``segment`` logged an iteration and saved its checkpoint."""
        try:
            saved = (self.run_dir / "checkpoints" / "last.pt").stat().st_mtime
        except OSError:
            return False
        return (
            saved >= segment.started_wall and last_iteration(self.run_dir) > segment.start_iteration
        )

    # -- faults
    def next_kind(self) -> str:
        if not self.bag:
            self.bag = list(self.args.kinds)
            self.rng.shuffle(self.bag)
        return self.bag[-1]

    def inject(self, segment: Segment, found: dict[str, list[psutil.Process]]) -> Fault | None:
        """The next fault of the bag on a random target of its role; None (postponed) when
        no target is there (e.g. the only host is stopped and not yet replaced)."""
        kind = self.next_kind()
        target_role = "env_worker" if kind.endswith("worker") else self.args.simulator_role
        pending = {f.pid for f in self.faults if f.outcome == "pending"}
        targets = []
        for process in found.get(target_role, []):
            try:
                if process.pid not in pending and process.status() != psutil.STATUS_STOPPED:
                    targets.append(process)
            except psutil.Error:
                continue
        if not targets:
            return None
        self.bag.pop()
        victim = self.rng.choice(sorted(targets, key=lambda p: p.pid))
        fault = Fault(
            kind, target_role, victim.pid, segment.index, round(self.now(), 2), victim=victim,
            before={p.pid for p in found.get(target_role, [])},
        )  # fmt: skip
        try:
            victim.send_signal(signal.SIGKILL if kind.startswith("kill") else signal.SIGSTOP)
        except psutil.Error:
            return None
        self.faults.append(fault)
        self.say(f"fault {len(self.faults)}: {kind} {target_role} pid {victim.pid}")
        return fault

    def check_recoveries(self, found: dict[str, list[psutil.Process]]) -> None:
        """Pending faults: recovered once the victim is gone and a new process of its role
        runs (each new pid credited to one fault); unrecovered past ``--recovery-timeout``."""
        for fault in self.faults:
            if fault.outcome != "pending":
                continue
            if alive(fault.victim):
                if self.now() - fault.t > self.args.recovery_timeout:
                    fault.outcome = "unrecovered"
                    self.say(f"NOT recovered: {fault.role} pid {fault.pid} still there")
                continue
            new = [
                p.pid
                for p in found.get(fault.role, [])
                if p.pid not in fault.before and p.pid not in self.claimed
            ]
            if new:
                self.claimed.add(new[0])
                fault.outcome, fault.new_pid = "recovered", new[0]
                fault.recovered_s = round(self.now() - fault.t, 2)
                self.say(
                    f"recovered: {fault.role} pid {fault.pid} -> {new[0]} in {fault.recovered_s} s"
                )
            elif self.now() - fault.t > self.args.recovery_timeout:
                fault.outcome = "unrecovered"
                self.say(f"NOT recovered: no new {fault.role} after pid {fault.pid}")

    def segment_ended(self, segment: Segment) -> None:
        """Classify a segment's exit; its faults' outcomes."""
        segment.exit_code = segment.proc.returncode
        text = segment.log.read_text(errors="replace")
        if segment.end != "sigterm":
            segment.end = "finished" if segment.exit_code == 0 else "failed"
        for fault in self.faults:
            if fault.segment == segment.index and fault.outcome == "pending":
                fault.outcome = "interrupted"
        segment.metrics_iteration = last_iteration(self.run_dir)
        segment.checkpoint = check_checkpoint(self.run_dir)
        self.say(
            f"segment {segment.index}: {segment.end} (exit code {segment.exit_code}); "
            f"checkpoint {segment.checkpoint}"
        )
        if segment.end == "failed":
            self.say(f"segment {segment.index} log tail:\n{text[-3000:]}")

    def stop(self, segment: Segment) -> None:
        """SIGTERM (the trainer saves and closes: exit code 130), SIGKILL past a deadline."""
        if segment.proc.poll() is None:
            segment.end = "sigterm"
            self.say(f"segment {segment.index}: SIGTERM")
            segment.proc.send_signal(signal.SIGTERM)
            try:
                segment.proc.wait(timeout=180)
            except subprocess.TimeoutExpired:
                segment.proc.kill()
                segment.proc.wait()
                segment.end = "failed"
        self.segment_ended(segment)
        if segment.end == "sigterm" and segment.exit_code != 130:
            segment.end = "failed"

    # -- main loop
    def run(self) -> None:
        """Train and inject faults until the time is up (and ``--min-faults`` were
        injected); then stop the run with SIGTERM."""
        args = self.args
        rate = args.faults_per_minute / 60
        next_fault = self.rng.expovariate(rate) if rate > 0 else math.inf
        segment = self.start_segment()
        while True:
            found = self.track(segment)
            self.check_recoveries(found)
            time_up = self.now() >= args.minutes * 60 and len(self.faults) >= args.min_faults
            if segment.proc.poll() is not None:
                self.segment_ended(segment)
                return  # a run that ends by itself under faults failed (or finished)
            if time_up:  # the last faults are seen through (recovered or timed out) first
                pending = any(f.outcome == "pending" for f in self.faults)
                if not pending and (segment.under_way or self.now() - segment.started > 300):
                    break
            elif segment.under_way and self.now() >= next_fault and self.inject(segment, found):
                next_fault = self.now() + self.rng.expovariate(rate)
                continue
            time.sleep(0.25)
        self.stop(segment)

    def abort(self) -> None:
        """Kill whatever still runs (chaos.py itself interrupted)."""
        for segment in self.segments:
            if segment.proc.poll() is None:
                segment.proc.kill()
                segment.proc.wait()

    # -- report
    def leftovers(self) -> list[dict[str, Any]]:
        """Processes of the run still running after its end: every process seen below a
        trainer, and any process naming the run dir or a simulator socket dir of the run."""
        marks = [str(self.run_dir), *(str(d) for d in self.sim_dirs)]
        return left_running(list(self.seen.values()), marks)

    def report(self) -> dict[str, Any]:
        final = self.segments[-1]
        rows = metrics_rows(self.run_dir)
        iterations = [int(r["iteration"]) for r in rows if r.get("iteration")]
        aborted = sum(int(r.get("episodes_aborted") or 0) for r in rows)
        checkpoints = [s.checkpoint for s in self.segments if s.checkpoint is not None]
        steps = [c["global_step"] for c in checkpoints if c.get("ok")]
        left = self.leftovers()
        dirs_left = sorted(str(d) for d in self.sim_dirs if d.exists())
        by_kind = {kind: sum(f.kind == kind for f in self.faults) for kind in self.args.kinds}
        recovered = [f for f in self.faults if f.outcome == "recovered"]
        checks = {
            "final_stop_clean": final.end in ("sigterm", "finished"),
            "one_segment": len(self.segments) == 1,
            "no_failed_segment": all(s.end != "failed" for s in self.segments),
            "faults_recovered": all(f.outcome in ("recovered", "interrupted") for f in self.faults),
            "checkpoints_load": bool(checkpoints) and all(c["ok"] for c in checkpoints),
            "global_step_never_back": steps == sorted(steps),
            "metrics_no_duplicate_iterations": len(iterations) == len(set(iterations))
            and iterations == sorted(iterations),
            # no logged iteration past its checkpoint at the stop
            "checkpoint_covers_metrics": all(
                s.checkpoint.get("iteration", -1) >= (s.metrics_iteration or 0)
                for s in self.segments
                if s.checkpoint is not None
            ),
            "nothing_left_running": not left,
            "no_sim_dirs_left": not dirs_left,
        }
        return {
            "command": self.command,
            "run_dir": str(self.run_dir),
            "backend": self.args.backend,
            "minutes": self.args.minutes,
            "seed": self.args.seed,
            "faults_per_minute": self.args.faults_per_minute,
            "elapsed_s": round(self.now(), 1),
            "faults": by_kind,
            "faults_total": len(self.faults),
            "recoveries": {
                "count": len(recovered),
                "seconds": [f.recovered_s for f in recovered],
                "max_s": max((f.recovered_s or 0.0 for f in recovered), default=None),
            },
            "battles_aborted": aborted,
            "checkpoint_global_steps": steps,
            "iterations_logged": len(iterations),
            "segments": [
                {
                    "index": s.index,
                    "end": s.end,
                    "exit_code": s.exit_code,
                    "log": str(s.log),
                    "checkpoint": s.checkpoint,
                }
                for s in self.segments
            ],
            "events": [{name: getattr(f, name) for name in EVENT_FIELDS} for f in self.faults],
            "left_running": left,
            "sim_dirs_left": dirs_left,
            "checks": checks,
            "passed": all(checks.values()),
            "machine": {"cpu_count": psutil.cpu_count(), "loadavg": psutil.getloadavg()},
        }


# the numeric options: flag, type, default, help
NUMBERS = (
    ("--minutes", float, 30.0, "time to inject faults"),
    ("--seed", int, 0, "seed of the fault schedule"),
    ("--faults-per-minute", float, 1.0, "mean fault rate"),
    ("--min-faults", int, 0, "go on past --minutes until this many faults were injected"),
    ("--step-timeout", float, 60.0, "env.step_timeout_s: a stopped worker is replaced after "
     "this; keep it above the time a stopped simulator takes to be replaced, ~11 s direct, "
     "~15 s server"),
    ("--recovery-timeout", float, 90.0, "seconds a killed or stopped process has to be "
     "replaced; a stopped worker needs --step-timeout plus its new env's start"),
)  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    """The command line (``--help`` shows the module docstring)."""
    parser = script_parser(__doc__)
    for flag, kind, default, text in NUMBERS:
        parser.add_argument(flag, type=kind, default=default, help=f"{text} (default {default})")
    parser.add_argument(
        "--backend", choices=("direct", "server"), default="direct", help="env.backend of the run"
    )
    parser.add_argument(
        "--sim-hosts", type=int, default=None, help="env.sim_hosts (direct backend; default: "
        "the config's)"
    )  # fmt: skip
    parser.add_argument(
        "--experiment", default="lstm_ppo", help="the +experiment to train (default lstm_ppo)"
    )
    parser.add_argument(
        "--kinds", default=",".join(KINDS), help="comma-separated fault kinds (default: all four)"
    )
    parser.add_argument("--run-dir", type=Path, help="run dir (default: a temporary one)")
    parser.add_argument("overrides", nargs="*", help="more trainer overrides (after --)")
    return parser


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parsed and checked arguments; a bad one is one line and exit code 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = sorted(set(args.kinds) - set(KINDS))
    if unknown or not args.kinds:
        parser.error(f"--kinds: unknown {unknown or 'empty'}; choose from {','.join(KINDS)}")
    if args.sim_hosts is not None and args.backend != "direct":
        parser.error("--sim-hosts is for --backend direct")
    if args.minutes < 0 or args.faults_per_minute < 0:
        parser.error("--minutes and --faults-per-minute must be >= 0")
    if args.min_faults > 0 and args.faults_per_minute == 0:
        parser.error("--min-faults needs --faults-per-minute > 0")
    if any(o.startswith(("hydra.run.dir=", "resume=")) for o in args.overrides):
        parser.error("give the run dir with --run-dir, not hydra.run.dir= or resume=")
    args.simulator_role = "sim_host" if args.backend == "direct" else "server"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    run_dir = (args.run_dir or Path(tempfile.mkdtemp(prefix="maple_chaos_"))).resolve()
    command = [
        sys.executable,
        "-m",
        "trainer",
        f"+experiment={args.experiment}",
        "tensorboard=false",
        f"env.backend={args.backend}",
        f"env.step_timeout_s={args.step_timeout}",
        *([f"env.sim_hosts={args.sim_hosts}"] if args.sim_hosts is not None else []),
        *args.overrides,
        f"hydra.run.dir={run_dir}",
    ]
    chaos = Chaos(args, command, run_dir)
    try:
        chaos.run()
    finally:
        chaos.abort()
    result = chaos.report()
    print_json(result, indent=2)
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
