"""scripts/stress/chaos.py: a short smoke-sized run under a high fault rate passes its own checks,
its JSON counts add up, and its log says what happened to each victim, in the words
docs/reliability.md quotes. With tests/trainer/run/test_faults.py (the faults that end a
run), this is the trainer-level test of every fault a run recovers from."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# runs on both backends: the CI's second pass repeats it with MAPLE_BACKEND=server
pytestmark = pytest.mark.backends

ROOT = Path(__file__).resolve().parents[2]
# the CI's second pass (MAPLE_BACKEND=server) runs it on Showdown servers
BACKEND = os.environ.get("MAPLE_BACKEND", "direct")


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_chaos_run_recovers_from_every_fault_kind(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        [
            sys.executable, str(ROOT / "scripts" / "stress" / "chaos.py"),
            "--minutes", "0.25",
            "--experiment", "smoke",
            "--backend", BACKEND,
            *(["--sim-hosts", "1"] if BACKEND == "direct" else []),
            "--faults-per-minute", "12",
            "--min-faults", "4",  # a shuffled bag of the 4 kinds: one of each
            "--step-timeout", "30",  # above a stopped simulator's replacement time
            "--seed", "1",
            "--run-dir", str(run_dir),
            "--",
            "total_steps=100000000",
            "checkpoint_every=0",
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=580,
    )  # fmt: skip
    assert proc.stdout, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["passed"] and proc.returncode == 0, (result["checks"], proc.stderr[-3000:])

    faults = result["faults"]
    assert sum(faults.values()) == result["faults_total"] >= 4
    assert all(n >= 1 for n in faults.values()), faults
    events = result["events"]
    assert len(events) == result["faults_total"]
    simulator = [e for e in events if e["kind"].endswith("simulator")]
    worker = [e for e in events if e["kind"].endswith("worker")]
    role = "sim_host" if BACKEND == "direct" else "server"
    assert simulator and worker  # one of each of the four kinds at least
    assert all(e["role"] == role for e in simulator)
    recovered = [e for e in events if e["outcome"] == "recovered"]
    assert result["recoveries"]["count"] == len(recovered)
    assert all(e["new_pid"] != e["pid"] for e in recovered)
    # every fault recovered in the same run: a worker replaced within its step, a simulator
    # restarted by its watchdog
    assert [e["outcome"] for e in events] == ["recovered"] * len(events)
    assert all(e["role"] == "env_worker" for e in worker)
    segments = result["segments"]
    assert [s["end"] for s in segments] == ["sigterm"] and segments[0]["exit_code"] == 130
    # one env: a fault aborts at most the one battle in flight
    assert 0 <= result["battles_aborted"] <= len(events)

    steps = result["checkpoint_global_steps"]
    assert steps == sorted(steps) and len(steps) == 1
    with (run_dir / "metrics.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    iterations = [int(r["iteration"]) for r in rows]
    assert iterations == list(range(1, len(rows) + 1))  # no duplicate, none missing
    assert int(rows[-1]["global_step"]) == steps[-1]
    assert result["left_running"] == [] and result["sim_dirs_left"] == []

    log = Path(segments[0]["log"]).read_text(errors="replace")
    for event in events:
        for line in _log_lines(event["kind"], event["pid"]):
            assert re.search(line, log), (line, log[-3000:])


def _log_lines(kind: str, pid: int) -> list[str]:
    """Patterns of the lines the run logs about a fault of ``kind`` on process ``pid``."""
    if kind == "kill_worker":  # its pipe may close before its exit is seen: the same fault;
        # or the victim was a replacement still starting (killed before its first step)
        return [
            r"env worker \d+ failed \((its process ended|its pipe closed).*\): replacing"
            r"|replacement \d+ of env worker \d+ failed"
        ]
    if kind == "stop_worker":
        return [
            r"env step stalled for over 10 s: worker\(s\) \[\d+\] silent",
            r"env worker \d+ failed \(it did not answer a step within 30 s\): replacing it",
        ]
    if BACKEND == "direct":
        if kind == "stop_simulator":
            return [rf"simulator host \d+ \(pid {pid}\) did not answer a ping in 10 s; killing it"]
        return [rf"simulator host \d+ \(pid {pid}\) died; restarting"]
    if kind == "stop_simulator":
        return [r"Showdown on \S+ is hung; killing it to restart it"]
    return [r"Showdown on port \d+ is not running; restarting it"]
