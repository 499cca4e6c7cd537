"""GAE on hand-worked examples (gamma 0.9, lambda 0.8 unless noted)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from trainer.algos.buffer import RolloutBuffer, compute_gae

R = torch.tensor([[1.0], [2.0], [3.0]])
V = torch.tensor([[0.5], [0.4], [0.3]])
LAST = torch.tensor([0.2])
ZERO = torch.zeros(3, 1)


def gae(terminated=ZERO, truncated=ZERO, final=None, has_final=None, gamma=0.9, lam=0.8):
    adv, ret = compute_gae(R, V, terminated, truncated, LAST, gamma, lam, final, has_final)
    return adv[:, 0].tolist(), ret[:, 0].tolist()


def test_no_episode_end_bootstraps_from_last_value() -> None:
    # deltas: 1+.9*.4-.5=.86, 2+.9*.3-.4=1.87, 3+.9*.2-.3=2.88; A_t = d_t + .72 A_{t+1}
    adv, ret = gae()
    assert adv == pytest.approx([3.699392, 3.9436, 2.88])
    assert ret == pytest.approx([4.199392, 4.3436, 3.18])


def test_terminated_does_not_bootstrap_and_cuts_the_trace() -> None:
    adv, _ = gae(terminated=torch.tensor([[0.0], [1.0], [0.0]]))
    # d1 = 2 - .4 = 1.6 (no next value); A0 = .86 + .72 * 1.6
    assert adv == pytest.approx([2.012, 1.6, 2.88])


def test_truncated_bootstraps_from_the_final_observation_value() -> None:
    truncated = torch.tensor([[0.0], [1.0], [0.0]])
    has_final = torch.tensor([[0.0], [1.0], [0.0]])
    final = torch.tensor([[0.0], [5.0], [0.0]])
    adv, _ = gae(truncated=truncated, final=final, has_final=has_final)
    # d1 = 2 + .9 * 5 - .4 = 6.1, the trace stops there; A0 = .86 + .72 * 6.1
    assert adv == pytest.approx([5.252, 6.1, 2.88])


def test_truncated_without_final_value_uses_the_next_row() -> None:
    # Next-step autoreset: the row after a truncation holds V(final obs) (here .3).
    adv, _ = gae(truncated=torch.tensor([[0.0], [1.0], [0.0]]))
    assert adv == pytest.approx([2.2064, 1.87, 2.88])


def test_truncated_and_terminated_means_terminated() -> None:
    flags = torch.tensor([[0.0], [1.0], [0.0]])
    adv, _ = gae(terminated=flags, truncated=flags, final=torch.full((3, 1), 9.0), has_final=flags)
    assert adv == pytest.approx([2.012, 1.6, 2.88])


def test_lambda_one_gamma_one_gives_monte_carlo_returns() -> None:
    _, ret = gae(gamma=1.0, lam=1.0)
    assert ret == pytest.approx([6.2, 5.2, 3.2])


def test_envs_are_independent_columns() -> None:
    rewards = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    values = torch.zeros(2, 2)
    terminated = torch.tensor([[1.0, 0.0], [0.0, 0.0]])
    adv, _ = compute_gae(rewards, values, terminated, torch.zeros(2, 2), torch.ones(2), 0.5, 1.0)
    # env 0: A0 = 1 (terminated), A1 = 0 + .5 * 1; env 1: A1 = 1 + .5 * 1, A0 = .5 * A1
    torch.testing.assert_close(adv, torch.tensor([[1.0, 0.75], [0.5, 1.5]]))


def test_buffer_masks_invalid_steps() -> None:
    buf = RolloutBuffer(
        3, 1, obs_dim=2, n_actions=2, bptt=0, hidden_shape=None, device=torch.device("cpu")
    )
    buf.rewards[:] = R.numpy()
    buf.values[:] = V
    buf.last_value[:] = LAST
    buf.terminated[1, 0] = True
    buf.valid[2, 0] = False  # e.g. the dummy step after a done (next-step autoreset)
    buf.compute_returns(0.9, 0.8)
    assert buf.advantages[:, 0].tolist() == pytest.approx([2.012, 1.6, 0.0])
    assert np.isclose(float(buf.returns[2, 0]), float(V[2, 0]))
