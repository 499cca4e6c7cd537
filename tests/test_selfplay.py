"""Self-play: snapshots, the pool, pushes to env workers, per-opponent win rates."""

from __future__ import annotations

import io
import math
import pickle

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from mapleenv import make_vector_env
from trainer.config import ModelConfig
from trainer.policy import build_policy
from trainer.selfplay import (
    SelfPlay,
    SelfPlayConfig,
    SnapshotPool,
    make_snapshot,
    opponent_win_rates,
    policy_from_snapshot,
    win_rate_columns,
)

OBS_DIM, N_ACTIONS = 116, 26  # SimpleEncoder, gen 9


def tiny_policy(seed: int = 0):
    torch.manual_seed(seed)
    return build_policy(OBS_DIM, N_ACTIONS, ModelConfig(kind="lstm", encoder_sizes=[32],
                                                        hidden_size=16))


@torch.no_grad()
def checksum(policy) -> float:
    return float(sum(p.double().abs().sum() for p in policy.parameters()))


def test_snapshot_rebuilds_the_same_policy_and_is_a_copy():
    policy = tiny_policy()
    snapshot = make_snapshot(policy, "simple", 3)
    assert snapshot["id"] == 3 and snapshot["encoder"] == "simple"
    assert all(isinstance(v, np.ndarray) for v in snapshot["model"].values())
    snapshot = pickle.loads(pickle.dumps(snapshot))  # what crosses the worker pipes
    rebuilt = policy_from_snapshot(snapshot)
    obs = torch.randn(5, 3, OBS_DIM)
    mask = torch.ones(5, 3, N_ACTIONS, dtype=torch.bool)
    start = torch.zeros(5, 3)
    start[0] = 1
    with torch.no_grad():
        expected = policy(obs, mask, policy.initial_state(3), start)
        got = rebuilt(obs, mask, rebuilt.initial_state(3), start)
    for a, b in zip(expected[:2], got[:2], strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(1.0)
    assert checksum(policy_from_snapshot(snapshot)) == pytest.approx(checksum(rebuilt))
    assert checksum(policy) != pytest.approx(checksum(rebuilt))


def test_pool_keeps_recent_and_archived_snapshots_and_survives_a_checkpoint():
    pool = SnapshotPool(pool_size=2, archive_size=1, archive_every=2)
    policy = tiny_policy()
    for _ in range(5):
        pool.add(policy, "simple")
    # 0 and 2 were archived when evicted (every 2nd), the archive keeps the newest one
    assert pool.ids() == [2, 3, 4]
    buffer = io.BytesIO()
    torch.save({"selfplay": pool.state_dict()}, buffer)
    buffer.seek(0)
    restored = SnapshotPool(pool_size=2, archive_size=1, archive_every=2)
    restored.load_state_dict(torch.load(buffer, weights_only=False)["selfplay"])
    assert restored.ids() == [2, 3, 4] and restored.next_id == 5
    assert restored.add(policy, "simple")["id"] == 5
    assert restored.ids() == [2, 4, 5]  # 3 is odd: dropped, not archived
    with pytest.raises(ValueError, match="pool_size"):
        SnapshotPool(pool_size=0)


def test_win_rates_per_opponent():
    columns = win_rate_columns(OmegaConf.create({"random": 0.5, "self": 0.5}))
    assert columns == ["win_rate/random", "win_rate/self"]
    rates = opponent_win_rates(columns, ["random", "self", "random", "random"],
                               [True, False, False, True])
    assert rates["win_rate/random"] == pytest.approx(2 / 3)
    assert rates["win_rate/self"] == 0.0
    assert math.isnan(opponent_win_rates(columns, [], [])["win_rate/self"])
    assert win_rate_columns("heuristic") == ["win_rate/heuristic"]


def test_self_play_only_for_opponents_with_self():
    env_cfg = OmegaConf.create({"opponent": "random", "encoder": "simple"})
    assert SelfPlay.for_env(SelfPlayConfig(), env_cfg, envs=None) is None
    env_cfg.opponent = {"random": 0.5, "self": 0.5}
    selfplay = SelfPlay.for_env(SelfPlayConfig(every=3), env_cfg, envs=None)
    assert selfplay is not None and selfplay.encoder == "simple"
    with pytest.raises(ValueError, match="every"):
        SelfPlay(SelfPlayConfig(every=0), None, "simple")


@pytest.mark.integration
def test_pushed_snapshots_reach_the_workers_and_self_plays_them(showdown_server):
    # max_turns: the battles only need to reach their end (truncation) quickly
    envs = make_vector_env(2, opponent="mix:self=1", encoder="simple", seed=0, max_turns=3,
                           server_url=showdown_server.server_configuration.websocket_url,
                           autoreset_mode="SameStep")
    try:
        selfplay = SelfPlay(SelfPlayConfig(every=2, pool_size=1), envs, "simple")
        policy = tiny_policy()
        selfplay.start(policy)
        first = checksum(policy)
        for stats in envs.call("call_opponent", "pool_stats"):
            assert stats["ids"] == [0] and stats["checksums"][0] == pytest.approx(first, rel=1e-9)

        with torch.no_grad():
            for p in policy.parameters():
                p.mul_(0.5)
        assert not selfplay.after_update(policy, iteration=1)  # not due
        assert selfplay.after_update(policy, iteration=2)
        for stats in envs.call("call_opponent", "pool_stats"):
            assert stats["ids"] == [1]  # pool_size=1: snapshot 0 was dropped
            assert stats["checksums"][1] == pytest.approx(first / 2, rel=1e-6)

        # the self-play opponent plays the pushed snapshot in real battles
        rng = np.random.default_rng(0)
        obs, _ = envs.reset(seed=0)
        finished = []
        for _ in range(3000):
            actions = [int(rng.choice(np.flatnonzero(m))) for m in obs["action_mask"]]
            obs, _, terminated, truncated, info = envs.step(np.array(actions))
            done = terminated | truncated
            if done.any():
                final = info["final_info"]
                finished += [final["opponent"][i] for i in np.flatnonzero(done)]
                break
        assert finished and set(finished) == {"self"}
        stats = envs.call("call_opponent", "pool_stats")
    finally:
        envs.close()
    assert sum(s["decisions"] for s in stats) > 0  # moves chosen by the snapshot's network
