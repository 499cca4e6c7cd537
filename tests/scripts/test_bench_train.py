"""``scripts/bench_train.py --baseline``: the A/B mode runs both checkouts' own benchmark,
reports both sides and their ratio, and leaves no worktree behind; bad baselines are one
line. (Speeds are not asserted here: the benchmark prints them.)"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from warm_cli import run_python

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "bench_train.py"
TINY = ["--experiment", "smoke", "--rounds", "1", "--iterations", "1"]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_train", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )


def _refused(*args: str) -> subprocess.CompletedProcess:
    """A command expected to stop at its argument checks, from the warm interpreter."""
    return run_python([sys.executable, SCRIPT, *args], cwd=REPO, timeout=120)


def test_last_json_skips_output_before_the_result(bench) -> None:
    stdout = 'log line {not json}\n{"a": 1}\nmore\n{\n  "b": [1, 2],\n  "c": {"d": 3}\n}\n'
    assert bench.last_json(stdout) == {"b": [1, 2], "c": {"d": 3}}
    with pytest.raises(ValueError, match="no JSON"):
        bench.last_json("no result\n")


def _worktrees() -> str:
    return subprocess.run(
        ["git", "worktree", "list", "--porcelain"], capture_output=True, text=True, cwd=REPO
    ).stdout


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(700)
def test_baseline_mode_reports_both_sides_and_removes_its_worktree() -> None:
    """``--baseline HEAD --a-override``: B is HEAD checked out in a temporary worktree, A
    this checkout with the override (two battles in one worker); one pair of runs shows
    both sides, their ratios and each run's worker memory."""
    args = ["--baseline", "HEAD", "--pairs", "1", "--a-override", "env.battles_per_worker=2"]
    out = _run(*args, *TINY, "--", "env.num_envs=2")
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=REPO
    ).stdout.strip()
    a, b = result["a"], result["b"]
    assert a["checkout"] == str(REPO) and b["rev"] == head
    for side in (a, b):
        assert len(side["runs"]) == 1 and len(side["train_sps"]) == len(side["env_only_sps"]) == 1
        assert side["train_sps_median"] > 0 and side["env_only_sps_median"] > 0
        assert side["num_envs"] == 2
    assert result["speedup"] == pytest.approx(a["train_sps_median"] / b["train_sps_median"])
    assert result["median_pair_speedup"] == pytest.approx(result["pair_speedups"][0])
    assert result["pair_speedups"][0] == pytest.approx(result["speedup"])
    assert result["machine"]["cores"] >= 1 and len(result["loadavg_end"]) == 3
    cpu = a["train_cpu_ms_per_step"]
    assert set(cpu) == {"main", "workers", "node", "total"}
    assert cpu["main"] > 0 and cpu["total"] == pytest.approx(
        cpu["main"] + cpu["workers"] + cpu["node"], abs=0.01
    )
    # the override reached A only: two battles in its one worker, B's two envs in two
    assert result["a_overrides"] == ["env.battles_per_worker=2"]
    (a_run,), (b_run,) = a["runs"], b["runs"]
    assert a_run["rss_mib"]["workers"] == 1 and b_run["rss_mib"]["workers"] == 2
    assert a_run["rss_mib"]["env_workers"] > 0 and result["env_workers_rss_ratio"] > 0
    # the temporary worktree is gone, from disk and from git's list
    assert not Path(b["checkout"]).exists()
    assert b["checkout"] not in _worktrees()


@pytest.mark.integration
def test_bad_baselines_are_one_line_errors(tmp_path: Path) -> None:
    unknown = _refused("--baseline", "no-such-rev-xyz", *TINY)
    assert unknown.returncode == 2
    assert unknown.stderr.strip() == (
        "bench_train.py: --baseline no-such-rev-xyz: unknown revision and not a directory"
    )
    not_maple = _refused("--baseline", str(tmp_path), *TINY)
    assert not_maple.returncode == 2
    assert not_maple.stderr.strip().endswith("not a Maple checkout (no scripts/bench_train.py)")
    assert len(not_maple.stderr.strip().splitlines()) == 1
