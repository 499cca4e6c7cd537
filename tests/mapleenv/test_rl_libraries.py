"""Maple's envs as other RL libraries take them: Gymnasium's and SB3's env checkers,
sb3-contrib ``MaskablePPO`` and plain SB3 ``PPO`` on real battles, vector-env masks."""

from __future__ import annotations

import warnings

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_checker import check_env as sb3_check_env
from stable_baselines3.common.logger import configure

import mapleenv
from mapleenv.vector import action_masks

# the tests marked backends use the default backend: the CI's second pass repeats them with
# MAPLE_BACKEND=server (the others name their backend, or start no env)


@pytest.mark.integration
@pytest.mark.parametrize(
    "kwargs",
    [pytest.param({}, marks=pytest.mark.backends), {"backend": "direct"}],
    ids=["default", "direct"],
)
def test_gymnasium_and_sb3_env_checkers_pass_without_warnings(kwargs):
    """The checkers report most findings as warnings, not errors: any from them fails."""
    env = gymnasium.make(mapleenv.ENV_ID, **kwargs)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            gymnasium_check_env(env.unwrapped)
            sb3_check_env(env.unwrapped, warn=True)
    finally:
        env.close()
    checkers = ("gymnasium", "stable_baselines3")
    assert [str(w.message) for w in caught if any(c in w.filename for c in checkers)] == []


@pytest.mark.integration
def test_direct_backend_resets_are_deterministic_per_seed():
    """What the checkers cannot assert for a ``nondeterministic`` env id: on the direct
    backend ``reset(seed=s)`` gives the same first observation (same teams)."""
    env = gymnasium.make(mapleenv.ENV_ID, backend="direct").unwrapped
    try:
        first = [env.reset(seed=s)[0]["observation"] for s in (123, 456, 123)]
    finally:
        env.close()
    assert np.array_equal(first[0], first[2])
    assert not np.array_equal(first[0], first[1])


class _Infos(BaseCallback):
    """Counts the steps whose info says an illegal action was replaced."""

    def __init__(self) -> None:
        super().__init__()
        self.illegal = 0

    def _on_step(self) -> bool:
        self.illegal += sum(bool(info.get("illegal_action")) for info in self.locals["infos"])
        return True


def quiet_logger(folder):
    """An SB3 logger that writes nothing, in the test's folder: SB3's default one makes a
    /tmp/SB3-<date> folder per run and leaves it behind."""
    return configure(str(folder), [])


def _params(model) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.policy.parameters()]


@pytest.mark.integration
def test_maskable_ppo_learns_on_real_battles_with_the_env_masks(tmp_path):
    # on_illegal="raise": one masked-out action would end the run with ValueError
    env = gymnasium.make(mapleenv.ENV_ID, backend="direct", on_illegal="raise", seed=0)
    model = MaskablePPO(
        "MultiInputPolicy", env, n_steps=128, batch_size=64, n_epochs=2, seed=0, device="cpu"
    )
    model.set_logger(quiet_logger(tmp_path))
    before = _params(model)
    try:
        model.learn(total_timesteps=256)
    finally:
        env.close()
    assert model.num_timesteps >= 256
    assert len(model.ep_info_buffer) >= 1  # whole battles were played
    assert all(ep["r"] in (-1.0, 0.0, 1.0) for ep in model.ep_info_buffer)  # +-1 at the end
    assert any(not torch.equal(a, b) for a, b in zip(before, _params(model), strict=True))


@pytest.mark.integration
def test_plain_ppo_runs_and_its_illegal_actions_play_the_default(tmp_path):
    env = gymnasium.make(mapleenv.ENV_ID, backend="direct", seed=1)
    infos = _Infos()
    model = PPO("MultiInputPolicy", env, n_steps=64, batch_size=64, n_epochs=1, device="cpu")
    model.set_logger(quiet_logger(tmp_path))
    try:
        model.learn(total_timesteps=64, callback=infos)
    finally:
        env.close()
    assert model.num_timesteps >= 64
    assert infos.illegal > 0  # an unmasked policy picks masked-out actions: they were played


@pytest.mark.integration
def test_vector_env_action_masks_match_the_observations():
    envs = mapleenv.make_vector_env(2, backend="direct", sim_hosts=1, seed=0)
    rng = np.random.default_rng(0)
    try:
        obs, _ = envs.reset()
        for _ in range(5):
            masks = envs.action_masks()
            assert masks.shape == (2, envs.single_action_space.n) and masks.dtype == bool
            assert np.array_equal(masks, obs["action_mask"].astype(bool))
            assert np.array_equal(action_masks(envs), masks)
            actions = [int(rng.choice(np.flatnonzero(row))) for row in masks]
            obs, *_ = envs.step(np.array(actions))
    finally:
        envs.close()


@pytest.mark.integration
def test_trainer_envs_raise_on_illegal_actions():
    """The trainer's envs keep ``on_illegal="raise"`` (a masked sampler never picks one)."""
    from trainer.config import ShowdownEnvConfig
    from trainer.envs.vector import make_envs, run_spec

    cfg = ShowdownEnvConfig(num_envs=1, backend="direct", sim_hosts=0)
    envs = make_envs(cfg, run_spec(cfg, None, seed=None, log_dir=None))
    try:
        assert envs.get_attr("on_illegal") == ("raise",)
    finally:
        envs.close()
