"""Hydra launcher configs in conf/hydra/launcher: they compose against the plugins' schemas,
and a real sweep of the trainer runs through the Ray launcher on a local Ray instance."""

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytest.importorskip("hydra_plugins.hydra_ray_launcher")
pytest.importorskip("hydra_plugins.hydra_joblib_launcher")

from hydra import compose, initialize_config_dir  # noqa: E402
from hydra.utils import instantiate  # noqa: E402

import trainer.config  # noqa: E402,F401  (registers the trainer's schemas)

pytestmark = [pytest.mark.ray, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[3]
LAUNCHERS = sorted(p.stem for p in (ROOT / "conf" / "hydra" / "launcher").glob("*.yaml"))


def _launcher(name: str):
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=[f"hydra/launcher={name}"], return_hydra_config=True)
    return cfg.hydra.launcher


@pytest.mark.parametrize("name", LAUNCHERS)
def test_launcher_configs_build_their_plugin(name):
    launcher = instantiate(_launcher(name))
    expected = "JoblibLauncher" if name.startswith("joblib") else "RayLauncher"
    assert type(launcher).__name__ == expected


def test_launcher_settings():
    assert LAUNCHERS == ["joblib_local", "ray_cluster", "ray_local"]
    assert _launcher("joblib_local").n_jobs == 2
    cluster = _launcher("ray_cluster").ray
    assert cluster.init.address == "auto" and cluster.remote.num_gpus == 1
    local = _launcher("ray_local").ray
    assert local.init.address == "local" and local.remote.num_cpus == 1


@pytest.mark.slow
def test_ray_launcher_sweeps_the_trainer_locally(tmp_path):
    """Two tiny CartPole runs as Ray tasks: each writes its own metrics and checkpoint."""
    cmd = [
        sys.executable,
        "-m",
        "trainer",
        "-m",
        "hydra/launcher=ray_local",
        "env=gym",
        "env.num_envs=2",
        "device=cpu",
        "tensorboard=false",
        "total_steps=32",
        "algo.rollout_steps=16",
        "model.encoder_sizes=[16]",
        "model.hidden_size=16",
        "algo.lr=1e-3,3e-4",
        f"hydra.sweep.dir={tmp_path}",
    ]
    env = {**os.environ, "RAY_ADDRESS": ""}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Ray Launcher is launching 2 jobs" in proc.stdout + proc.stderr
    for job, lr in (("0", "0.001"), ("1", "0.0003")):
        with open(tmp_path / job / "metrics.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == 1 and rows[0]["global_step"] == "32"
        assert float(rows[0]["lr"]) == pytest.approx(float(lr))
        assert (tmp_path / job / "checkpoints" / "last.pt").exists()
