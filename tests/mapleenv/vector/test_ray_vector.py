"""RayVectorEnv against a local Ray instance started here (2 CPUs, no dashboard): parity
with the local vector env, shard failures, and the trainer on shards (same metrics; a
killed shard stops the run with a checkpoint that `resume` continues)."""

import csv
import functools
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorWrapper

ray = pytest.importorskip("ray")

from hydra import compose, initialize_config_dir  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from mapleenv.vector.ray import RayVectorEnv, ShardFailedError  # noqa: E402
from trainer.config import to_train_config  # noqa: E402
from trainer.run.checkpoint import CHECKPOINT_DIR, LAST, load_checkpoint  # noqa: E402
from trainer.run.train import Trainer  # noqa: E402

# CartPole only: nothing here uses the default backend, so the CI's server pass leaves it out
pytestmark = [pytest.mark.ray, pytest.mark.timeout(300)]

CARTPOLE = functools.partial(
    gym.make_vec, "CartPole-v1", wrappers=[gym.wrappers.RecordEpisodeStatistics]
)
CONF_DIR = str(Path(__file__).resolve().parents[3] / "conf")
# The trainer's env=gym vector env (SAME_STEP autoreset), one per shard.
CARTPOLE_SHARD = functools.partial(
    gym.make_vec,
    "CartPole-v1",
    vectorization_mode="sync",
    vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
)
TINY = [
    "device=cpu",
    "tensorboard=false",
    "model.encoder_sizes=[16]",
    "model.hidden_size=16",
    "algo.rollout_steps=16",
    "algo.bptt=8",
    "algo.epochs=1",
    "algo.num_minibatches=2",
]


class SlowOnOddActions(gym.Wrapper):
    """Sleeps 3 s on action 1 (pickled by value: tests/ is not importable in Ray workers)."""

    def step(self, action):
        if action == 1:
            time.sleep(3)
        return self.env.step(action)


class MaskedCartPole(gym.Wrapper):
    """CartPole with an ``action_masks()`` that depends on the last observation."""

    def reset(self, **kwargs):
        self.obs, info = self.env.reset(**kwargs)
        return self.obs, info

    def step(self, action):
        self.obs, *rest = self.env.step(action)
        return (self.obs, *rest)

    def action_masks(self):
        return np.array([self.obs[0] > 0, True])


@pytest.fixture(scope="module")
def local_ray():
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _cartpole_shards(
    num_envs: int, autoreset: AutoresetMode = AutoresetMode.NEXT_STEP
) -> RayVectorEnv:
    kwargs = {"vectorization_mode": "sync", "vector_kwargs": {"autoreset_mode": autoreset}}
    return RayVectorEnv(num_envs, 2, env_fn=CARTPOLE, env_kwargs=kwargs, cpus_per_shard=1)


@pytest.mark.parametrize("autoreset", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_two_shards_match_the_local_vector_env(local_ray, autoreset):
    """Same seeds and actions: identical obs, rewards, dones and merged episode infos."""
    local = CARTPOLE(
        num_envs=5, vectorization_mode="sync", vector_kwargs={"autoreset_mode": autoreset}
    )
    sharded = _cartpole_shards(5, autoreset=autoreset)
    try:
        assert sharded.observation_space == local.observation_space
        assert sharded.action_space == local.action_space
        assert sharded.metadata["autoreset_mode"] == local.metadata["autoreset_mode"]
        assert len(set(sharded.node_ips)) == 1 and sharded.node_ips[0] != "unknown (starting)"
        described = ray.get([actor.describe.remote() for actor in sharded.actors])
        assert [d["cuda_visible_devices"] for d in described] == ["", ""]  # no CUDA in shards

        obs, _ = sharded.reset(seed=7)
        local_obs, _ = local.reset(seed=7)
        np.testing.assert_array_equal(obs, local_obs)
        rng = np.random.default_rng(0)
        episodes = 0
        for _ in range(120):
            actions = rng.integers(0, 2, size=5)
            obs, rew, term, trunc, info = sharded.step(actions)
            l_obs, l_rew, l_term, l_trunc, l_info = local.step(actions)
            np.testing.assert_array_equal(obs, l_obs)
            np.testing.assert_array_equal(rew, l_rew)
            np.testing.assert_array_equal(term, l_term)
            np.testing.assert_array_equal(trunc, l_trunc)
            assert info.keys() == l_info.keys()
            ep, l_ep = info, l_info
            if autoreset == AutoresetMode.SAME_STEP and "final_info" in info:
                ep, l_ep = info["final_info"], l_info["final_info"]
                np.testing.assert_array_equal(info["_final_obs"], l_info["_final_obs"])
                for got, want in zip(info["final_obs"], l_info["final_obs"], strict=True):
                    np.testing.assert_array_equal(got, want)
            if "episode" in ep:
                episodes += int(ep["_episode"].sum())
                np.testing.assert_array_equal(ep["_episode"], l_ep["_episode"])
                np.testing.assert_array_equal(ep["episode"]["r"], l_ep["episode"]["r"])
                np.testing.assert_array_equal(ep["episode"]["l"], l_ep["episode"]["l"])
        assert episodes > 5  # random CartPole episodes end within ~25 steps
        assert sharded.get_attr("spec")[0].id == "CartPole-v1"
        assert sharded.call("render") == (None,) * 5
    finally:
        sharded.close()
        local.close()
    assert sharded.closed


def test_action_masks_of_two_shards_follow_env_order(local_ray):
    make = functools.partial(gym.make_vec, "CartPole-v1", wrappers=[MaskedCartPole])
    env = RayVectorEnv(5, 2, env_fn=make, env_kwargs={"vectorization_mode": "sync"})
    try:
        obs, _ = env.reset(seed=0)
        for _ in range(3):
            masks = env.action_masks()
            assert masks.shape == (5, 2) and masks.dtype == bool
            assert np.array_equal(masks[:, 0], obs[:, 0] > 0) and masks[:, 1].all()
            obs, *_ = env.step(np.zeros(5, dtype=np.int64))
    finally:
        env.close()


def test_killed_shard_raises_shard_failed_error(local_ray):
    env = _cartpole_shards(4)
    try:
        env.reset(seed=0)
        env.step(np.zeros(4, dtype=np.int64))
        node_ip = env.node_ips[1]
        ray.kill(env.actors[1])
        with pytest.raises(ShardFailedError) as caught:
            for _ in range(50):  # the kill lands asynchronously
                env.step(np.zeros(4, dtype=np.int64))
        err = caught.value
        assert (err.shard, err.envs, err.node_ip) == (1, range(2, 4), node_ip)
        assert "actor died" in err.cause
        assert f"Ray shard 1 (envs 2..3) on node {node_ip}" in str(err)
    finally:
        env.close()  # must not raise with a dead shard
    assert env.closed


def test_exception_inside_a_shard_names_that_shard(local_ray):
    env = _cartpole_shards(4)
    try:
        env.reset(seed=0)
        with pytest.raises(ShardFailedError, match=r"shard 0 .*exception in shard") as caught:
            env.step(np.array([5, 0, 0, 0]))  # 5 is not a CartPole action
        assert caught.value.shard == 0
    finally:
        env.close()


def test_shard_that_fails_to_start_is_reported(local_ray):
    with pytest.raises(ShardFailedError, match="start: actor died") as caught:
        RayVectorEnv(2, 2, env_fn=functools.partial(gym.make_vec, "NoSuchEnv-v0"))
    assert caught.value.shard == 0
    assert "failed to start" in caught.value.cause and "NoSuchEnv" in caught.value.cause


def test_hung_shard_times_out_as_shard_failed_error(local_ray):
    env = RayVectorEnv(
        2,
        2,
        env_fn=functools.partial(gym.make_vec, "CartPole-v1", wrappers=[SlowOnOddActions]),
        env_kwargs={"vectorization_mode": "sync"},
        step_timeout_s=1.0,
    )
    try:
        env.reset(seed=0)
        env.step(np.array([0, 0]))  # fast: within the timeout
        with pytest.raises(
            ShardFailedError, match=r"step: timed out \(no answer within 1 s\)"
        ) as caught:
            env.step(np.array([0, 1]))
        assert caught.value.shard == 1
    finally:
        env.close()


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
    cfg, raw = _config("env=gym", "env.num_envs=4", "total_steps=128")
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
    cfg, raw = _config("env=gym", "env.num_envs=4", "total_steps=192")
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
