"""The documented Ray override end to end: `python -m trainer ... env.vectorization=ray`
in a fresh process that starts its own local Ray instance."""

import csv
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

pytest.importorskip("ray")

from trainer.run.checkpoint import CHECKPOINT_DIR, LAST, load_checkpoint  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[3]


def _columns(run_dir: Path) -> tuple[list[str], int]:
    with open(run_dir / "metrics.csv", newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], len(rows) - 1


def _sim_hosts(tag: str) -> set[int]:
    """PIDs of live direct-backend simulator hosts (``node .../sim_host.js``) started under
    the run that set ``MAPLE_TEST_TAG=tag`` (Ray's workers and their children inherit the
    driver's environment): other tests' hosts, on another pytest-xdist worker or another
    checkout, do not count."""
    pids = set()
    for proc in psutil.process_iter(["cmdline"]):
        if not any(part.endswith("sim_host.js") for part in proc.info["cmdline"] or ()):
            continue
        try:
            ours = proc.environ().get("MAPLE_TEST_TAG") == tag
            if ours and proc.status() != psutil.STATUS_ZOMBIE:
                pids.add(proc.pid)
        except psutil.Error:
            continue
    return pids


def _node_processes_under(directory: Path) -> list[int]:
    """PIDs of live `node` processes whose working directory is inside `directory`."""
    pids = []
    for proc in psutil.process_iter(["name"]):
        try:
            if proc.info["name"] == "node" and Path(proc.cwd()).is_relative_to(directory):
                pids.append(proc.pid)
        except psutil.Error:
            continue
    return pids


@pytest.mark.integration
@pytest.mark.parametrize(
    ("experiment", "backend"), [("smoke", "direct"), ("doubles_smoke", "server")]
)
def test_cli_smoke_experiment_on_two_ray_shards(tmp_path, experiment, backend):
    """The documented override end to end, in a fresh process with its own local Ray:
    each shard starts its own simulator host or Showdown server (in its own log dir) and
    stops it; double battles (joint actions, the doubles encoder) shard the same way.
    Each game and each backend once: singles on the default backend, doubles on servers."""
    env = {**os.environ, "RAY_ADDRESS": "", "MAPLE_TEST_TAG": str(tmp_path)}
    cmd = [
        sys.executable,
        "-m",
        "trainer",
        f"+experiment={experiment}",
        "env.num_envs=2",
        "env.vectorization=ray",
        "env.ray.shards=2",
        "total_steps=64",
        "algo.rollout_steps=16",
        f"hydra.run.dir={tmp_path}",
        "tensorboard=false",
        f"env.backend={backend}",
    ]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stderr[-3000:]
    columns, rows = _columns(tmp_path)
    assert {"global_step", "sps", "episode_return", "win_rate"} <= set(columns)
    assert rows == 2  # 64 steps / (16 steps x 2 envs)
    checkpoint = load_checkpoint(tmp_path / CHECKPOINT_DIR / LAST)
    assert checkpoint["global_step"] == 64
    if experiment == "doubles_smoke":  # the joint action space of two slots (47 x 47)
        assert checkpoint["policy"]["n_actions"] == 47 * 47
    assert "RayVectorEnv: 2 envs in 2 shards" in proc.stdout + proc.stderr
    assert f"{backend} backend" in proc.stdout + proc.stderr
    if backend == "server":
        for shard in ("shard0", "shard1"):
            assert list((tmp_path / "showdown" / shard).glob("showdown-*.log")), shard
    assert _node_processes_under(tmp_path) == []  # the shards stopped their servers
    assert _sim_hosts(str(tmp_path)) == set()  # ... and their simulator hosts
