"""The trainer on Ray shards: same metrics as locally, and a killed shard stops the run
with a checkpoint that `resume` continues. Local Ray instance started here (2 CPUs)."""

import csv
import functools
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.vector import AutoresetMode, VectorWrapper

ray = pytest.importorskip("ray")

from hydra import compose, initialize_config_dir  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from mapleenv.ray_vector import RayVectorEnv, ShardFailedError  # noqa: E402
from trainer.checkpoint import CHECKPOINT_DIR, LAST, load_checkpoint  # noqa: E402
from trainer.config import to_train_config  # noqa: E402
from trainer.train import Trainer  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parent.parent
CONF_DIR = str(ROOT / "conf")
# Same vector env as the trainer's env=gym factory (SAME_STEP autoreset), one per shard.
CARTPOLE_SHARD = functools.partial(
    gym.make_vec,
    "CartPole-v1",
    vectorization_mode="sync",
    vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
)
TINY = [
    "env=gym",
    "env.num_envs=4",
    "device=cpu",
    "tensorboard=false",
    "model.encoder_sizes=[16]",
    "model.hidden_size=16",
    "algo.rollout_steps=16",
    "algo.bptt=8",
    "algo.epochs=1",
    "algo.num_minibatches=2",
]


@pytest.fixture(scope="module")
def local_ray():
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _config(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("config", overrides=[*TINY, *overrides])
    return to_train_config(cfg), OmegaConf.to_container(cfg, resolve=True)


def _columns(run_dir: Path) -> tuple[list[str], int]:
    with open(run_dir / "metrics.csv", newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], len(rows) - 1


class KillShardAt(VectorWrapper):
    """Kills one shard's actor once `at_step` vector steps have been taken."""

    def __init__(self, env: RayVectorEnv, shard: int, at_step: int) -> None:
        super().__init__(env)
        self.shard, self.at_step, self.steps = shard, at_step, 0

    def step(self, actions):
        self.steps += 1
        if self.steps == self.at_step:
            ray.kill(self.env.unwrapped.actors[self.shard])
        return self.env.step(actions)


def test_trainer_on_two_ray_shards_writes_the_local_metrics(local_ray, tmp_path):
    cfg, raw = _config("total_steps=128")
    local = Trainer(cfg, tmp_path / "local", raw)  # builds its local vector env itself
    try:
        local.run()
    finally:
        local.close()

    envs = RayVectorEnv(4, 2, env_fn=CARTPOLE_SHARD)
    try:
        sharded = Trainer(cfg, tmp_path / "ray", raw, envs=envs)
        row = sharded.run()
        sharded.close()
    finally:
        envs.close()
    assert row is not None and row["global_step"] == 128
    assert _columns(tmp_path / "ray") == _columns(tmp_path / "local")
    assert _columns(tmp_path / "ray")[1] == 2  # 128 steps / (16 steps x 4 envs)
    assert load_checkpoint(tmp_path / "ray" / CHECKPOINT_DIR / LAST)["global_step"] == 128


def test_killed_shard_stops_the_run_with_a_checkpoint_that_resumes(local_ray, tmp_path):
    cfg, raw = _config("total_steps=192")
    run_dir = tmp_path / "run"
    envs = RayVectorEnv(4, 2, env_fn=CARTPOLE_SHARD)
    try:
        trainer = Trainer(cfg, run_dir, raw, envs=KillShardAt(envs, shard=1, at_step=20))
        with pytest.raises(ShardFailedError) as caught:
            trainer.run()
        trainer.close()
    finally:
        envs.close()
    assert caught.value.shard == 1 and caught.value.envs == range(2, 4)
    assert "killed by `ray.kill`" in caught.value.cause
    # iteration 1 (16 vector steps) completed and was saved; iteration 2 died at step 20
    assert load_checkpoint(run_dir / CHECKPOINT_DIR / LAST)["global_step"] == 64
    assert _columns(run_dir)[1] == 1

    envs = RayVectorEnv(4, 2, env_fn=CARTPOLE_SHARD)  # fresh shards continue the run
    try:
        resumed = Trainer(cfg, run_dir, raw, envs=envs, resume_from=run_dir / CHECKPOINT_DIR / LAST)
        assert resumed.global_step == 64
        assert resumed.run()["global_step"] == 192
        resumed.close()
    finally:
        envs.close()
    assert _columns(run_dir)[1] == 3


def _trainer_has_ray_vectorization() -> bool:
    from trainer.config import ShowdownEnvConfig

    return "ray" in getattr(ShowdownEnvConfig, "__dataclass_fields__", {})


@pytest.mark.integration
@pytest.mark.skipif(
    not _trainer_has_ray_vectorization(),
    reason="trainer config has no env.vectorization=ray / env.ray yet (docs/scaling.md)",
)
def test_cli_smoke_experiment_on_two_ray_shards(tmp_path):
    """The documented override, end to end in a fresh process with its own Ray."""
    env = {**os.environ, "RAY_ADDRESS": ""}
    cmd = [
        sys.executable,
        "-m",
        "trainer",
        "+experiment=smoke",
        "env.num_envs=2",
        "env.vectorization=ray",
        "env.ray.shards=2",
        f"hydra.run.dir={tmp_path}",
        "tensorboard=false",
    ]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stderr[-3000:]
    columns, rows = _columns(tmp_path)
    assert {"global_step", "sps", "episode_return", "win_rate"} <= set(columns)
    assert rows >= 1
    assert (tmp_path / CHECKPOINT_DIR / LAST).exists()
