"""Rollout collection: autoreset modes, episode starts, truncation bootstrap, masks."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from memory_env import MemoryEnv, memory_vector_env

from trainer.algos.buffer import RolloutBuffer
from trainer.config import ModelConfig
from trainer.envs.spaces import ObsAdapter
from trainer.policy import build_policy
from trainer.run.rollout import RolloutCollector

CPU = torch.device("cpu")


def setup(envs, steps: int, bptt: int = 0, kind: str = "lstm"):
    torch.manual_seed(0)
    adapter = ObsAdapter(envs.single_observation_space, envs.single_action_space)
    cfg = ModelConfig(kind=kind, encoder_sizes=[16], hidden_size=8)
    policy = build_policy(adapter.obs_dim, adapter.n_actions, cfg)
    hidden = (1, policy.state_size) if policy.recurrent else None
    buffer = RolloutBuffer(
        steps, envs.num_envs, adapter.obs_dim, adapter.n_actions, bptt, hidden, CPU
    )
    return policy, buffer, RolloutCollector(envs, policy, adapter, CPU, seed=0)


def test_same_step_autoreset_starts_episodes_right_after_a_done() -> None:
    envs = memory_vector_env(3, "SameStep", delay=2)
    _, buffer, collector = setup(envs, steps=9)
    stats = collector.collect(buffer)
    envs.close()
    done = buffer.terminated | buffer.truncated
    assert buffer.valid.all()
    assert done[2::3].all() and done.sum() == 9  # episodes of 3 steps, ending at t=2,5,8
    starts = buffer.episode_start.numpy().astype(bool)
    assert starts[0].all() and (starts[1:] == done[:-1]).all()
    assert stats.lengths == [3] * 9 and len(stats.wins) == 9


def test_next_step_autoreset_envs_are_refused() -> None:
    envs = memory_vector_env(2, "NextStep", delay=2)
    try:
        with pytest.raises(ValueError, match="SAME_STEP"):
            setup(envs, steps=12)
    finally:
        envs.close()


def test_truncation_bootstraps_from_final_obs_with_the_episode_state() -> None:
    # delay 4 but truncated after 3 steps: every episode is truncated, final obs is blank.
    envs = memory_vector_env(2, "SameStep", delay=4, max_episode_steps=3)
    policy, buffer, collector = setup(envs, steps=6)
    collector.collect(buffer)
    envs.close()
    assert buffer.truncated[[2, 5]].all() and buffer.has_final_value[[2, 5]].all()
    assert buffer.has_final_value.sum() == 4
    with torch.no_grad():
        for env in range(2):
            for end in (2, 5):
                hidden = policy.initial_state(1)
                for t in range(end - 2, end + 1):
                    _, _, hidden = policy(
                        buffer.obs[t, env : env + 1],
                        buffer.action_mask[t, env : env + 1],
                        hidden,
                        buffer.episode_start[t, env : env + 1],
                    )
                mask = torch.ones(1, 2, dtype=torch.bool)
                _, value, _ = policy(torch.zeros(1, 3), mask, hidden, torch.zeros(1))
                torch.testing.assert_close(buffer.final_values[end, env], value[0])


class AbortOnTruncation(gym.Wrapper):
    """Marks every truncated episode aborted, as PokemonEnv does when its simulator is lost."""

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if truncated:
            info = {**info, "aborted": "connection closed"}
        return obs, reward, terminated, truncated, info


def test_aborted_episodes_are_counted_among_the_finished_ones() -> None:
    # env 0: every episode truncated after 3 steps and aborted; env 1: won or lost at step 3
    envs = gym.vector.SyncVectorEnv(
        [
            lambda: AbortOnTruncation(MemoryEnv(delay=4, max_episode_steps=3)),
            lambda: MemoryEnv(delay=2),
        ],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )
    _, buffer, collector = setup(envs, steps=9)
    stats = collector.collect(buffer)
    envs.close()
    assert len(stats.returns) == 6 and len(stats.wins) == 3  # aborted ones have no result
    assert stats.aborted == 3


def test_action_mask_is_respected_during_rollouts() -> None:
    envs = memory_vector_env(4, "SameStep", delay=1, action_mask=True)  # env raises on action 2
    _, buffer, collector = setup(envs, steps=64)
    collector.collect(buffer)
    envs.close()
    assert not (buffer.actions == 2).any()
    assert not buffer.action_mask[..., 2].any() and buffer.action_mask[..., :2].all()


def test_chunk_start_states_are_the_rollout_states() -> None:
    envs = memory_vector_env(2, "SameStep", delay=5)
    policy, buffer, collector = setup(envs, steps=8, bptt=4)
    initial = tuple(h.clone() for h in collector.hidden)
    collector.collect(buffer)
    envs.close()
    torch.testing.assert_close(buffer.chunk_hidden[0][0], initial[0])
    with torch.no_grad():
        _, _, hidden = policy(
            buffer.obs[:4], buffer.action_mask[:4], initial, buffer.episode_start[:4]
        )
    torch.testing.assert_close(buffer.chunk_hidden[0][1], hidden[0])
    torch.testing.assert_close(buffer.chunk_hidden[1][1], hidden[1])


def test_mlp_rollout_has_no_state() -> None:
    envs = memory_vector_env(2, "SameStep", delay=2)
    _, buffer, collector = setup(envs, steps=5, kind="mlp")
    collector.collect(buffer)
    envs.close()
    assert collector.hidden == () and buffer.chunk_hidden == ()


def test_obs_adapter_one_hot_and_dict_spaces() -> None:
    adapter = ObsAdapter(gym.spaces.Discrete(4), gym.spaces.Discrete(2))
    obs, mask = adapter.batch(np.array([2, 0]))
    assert obs.tolist() == [[0, 0, 1, 0], [1, 0, 0, 0]] and mask.all()
    env = MemoryEnv(action_mask=True)
    adapter = ObsAdapter(env.observation_space, env.action_space)
    single, mask1 = adapter.single(env.reset(seed=0)[0])
    assert single.shape == (3,) and mask1.tolist() == [True, True, False]
    with pytest.raises(ValueError, match="Discrete action space"):
        ObsAdapter(gym.spaces.Box(0, 1, (2,)), gym.spaces.Box(0, 1, (2,)))
    with pytest.raises(ValueError, match="action_mask"):
        ObsAdapter(gym.spaces.Dict(obs=gym.spaces.Box(0, 1, (2,))), gym.spaces.Discrete(2))
