"""The auxiliary opponent-action loss: its targets in the rollout buffer and the PPO term."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from memory_env import MemoryEnv

from trainer.algos.buffer import RolloutBuffer
from trainer.algos.ppo import ppo_update
from trainer.algos.terms import aux_term
from trainer.config import ModelConfig, PPOConfig
from trainer.envs.spaces import ObsAdapter
from trainer.policy import build_policy
from trainer.run.rollout import RolloutCollector, aux_after_step

CPU = torch.device("cpu")
ENVS, CLASSES = 3, 3


class Labelled(gym.Wrapper):
    """The memory task with an ``opponent_action`` key: -1 at reset, then ``(t + cue) % 3``
    after each step; every label a step emitted is logged (the expected targets)."""

    def __init__(self, delay: int) -> None:
        super().__init__(MemoryEnv(delay=delay, action_mask=True))
        label = spaces.Box(-1, CLASSES - 1, (1,), dtype=np.int64)
        self.observation_space = spaces.Dict(
            {**self.env.observation_space.spaces, "opponent_action": label}
        )
        self.emitted: list[int] = []

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return {**obs, "opponent_action": np.array([-1])}, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        label = (self.env.unwrapped.t + self.env.unwrapped.cue) % CLASSES
        self.emitted.append(label)
        return {**obs, "opponent_action": np.array([label])}, reward, terminated, truncated, info


def collect(steps: int = 16, bptt: int = 4, aux_classes: int = CLASSES):
    torch.manual_seed(0)
    wrappers = [Labelled(delay=2 + i) for i in range(ENVS)]
    envs = gym.vector.SyncVectorEnv(
        [lambda w=w: w for w in wrappers], autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
    )
    adapter = ObsAdapter(envs.single_observation_space, envs.single_action_space)
    assert adapter.aux_classes == CLASSES
    cfg = ModelConfig(kind="lstm", encoder_sizes=[16], hidden_size=8, aux_classes=aux_classes)
    policy = build_policy(adapter.obs_dim, adapter.n_actions, cfg)
    buffer = RolloutBuffer(steps, ENVS, adapter.obs_dim, adapter.n_actions, bptt, (1, 8), CPU)
    RolloutCollector(envs, policy, adapter, CPU, seed=0).collect(buffer)
    envs.close()
    buffer.compute_returns(0.99, 0.95)
    return policy, buffer, [w.emitted for w in wrappers]


def test_target_of_a_step_is_the_label_of_the_observation_after_it() -> None:
    """Episode ends included: a done step's target is its final observation's label (not
    the reset observation's -1 that the vector env returns in its place)."""
    _, buffer, emitted = collect()
    expected = torch.tensor(emitted).T  # [steps, envs]
    assert torch.equal(buffer.aux_targets, expected)
    done = torch.from_numpy(buffer.terminated)
    assert done.any() and (buffer.aux_targets[done] >= 0).all()


def test_done_step_without_a_final_observation_is_unlabelled() -> None:
    aux, done = np.array([2, 1, 0]), np.array([False, True, True])
    assert aux_after_step(aux, done, {}).tolist() == [2, -1, -1]
    final_obs = np.array([None, {"opponent_action": np.array([3])}, None], dtype=object)
    info = {
        "final_obs": final_obs,
        "final_info": {"aborted": np.array([None, "lost", None]), "_aborted": done & [0, 1, 0]},
    }
    assert aux_after_step(aux, done, info).tolist() == [2, -1, -1]  # aborted: its old obs
    info["final_info"]["_aborted"] = np.zeros(3, dtype=bool)
    assert aux_after_step(aux, done, info).tolist() == [2, 3, -1]


def test_coefficient_zero_changes_nothing() -> None:
    """aux_coef 0 (no aux term): no aux statistics, the head gets no gradient, and every
    other parameter moves exactly as in the same network built without the head."""
    with_head, buffer, _ = collect()
    plain, _, _ = collect(aux_classes=0)
    head = {k: v.clone() for k, v in with_head.state_dict().items() if k.startswith("aux_head")}
    cfg = PPOConfig(epochs=2, num_minibatches=2)
    results = []
    for policy in (with_head, plain):
        optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
        gen = torch.Generator().manual_seed(0)
        results.append(ppo_update(policy, optimizer, buffer.chunks(), cfg, generator=gen))
    assert "aux_loss" not in results[0] and results[0] == results[1]
    trained = with_head.state_dict()
    assert all(torch.equal(trained[k], v) for k, v in head.items())
    for name, value in plain.state_dict().items():
        assert torch.equal(trained[name], value), name


def test_update_lowers_the_aux_loss() -> None:
    policy, buffer, _ = collect()
    buffer.advantages.zero_()
    batch = buffer.chunks()
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
    cfg = PPOConfig(epochs=1, num_minibatches=1, ent_coef=0.0, vf_coef=0.0)
    first = ppo_update(policy, optimizer, batch, cfg, terms=[aux_term(1.0)])
    for _ in range(30):
        last = ppo_update(policy, optimizer, batch, cfg, terms=[aux_term(1.0)])
    assert 0.0 <= first["aux_accuracy"] <= 1.0
    assert last["aux_loss"] < 0.75 * first["aux_loss"]
    assert last["aux_accuracy"] > first["aux_accuracy"]


def test_no_head_with_a_coefficient_is_an_error() -> None:
    policy, buffer, _ = collect(aux_classes=0)
    optimizer = torch.optim.Adam(policy.parameters())
    with pytest.raises(NotImplementedError, match="no auxiliary head"):
        ppo_update(policy, optimizer, buffer.chunks(), PPOConfig(), terms=[aux_term(0.5)])
