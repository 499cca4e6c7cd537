"""Self-play: snapshots, the pool, pushes to env workers, per-opponent win rates."""

from __future__ import annotations

import csv
import logging
import math
import pickle

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from mapleenv.opponents import FrozenPolicy
from mapleenv.policies import build_policy, policy_from_snapshot
from trainer.__main__ import CONF_DIR
from trainer.config import ModelConfig, SelfPlayConfig, to_train_config
from trainer.envs.episodes import OpponentStats, opponent_win_rates, win_rate_columns
from trainer.run.checkpoint import load_checkpoint, save_checkpoint
from trainer.run.selfplay import League, PromotionGate, SelfPlay, SnapshotPool, make_snapshot
from trainer.run.train import Trainer

OBS_DIM, N_ACTIONS = 116, 26  # SinglesBasicEncoder, gen 9


def tiny_policy(seed: int = 0):
    torch.manual_seed(seed)
    return build_policy(
        OBS_DIM, N_ACTIONS, ModelConfig(kind="lstm", encoder_sizes=[32], hidden_size=16)
    )


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


def test_pool_keeps_recent_and_archived_snapshots_and_survives_a_checkpoint(tmp_path):
    pool = SnapshotPool(pool_size=2, archive_size=1, archive_every=2)
    policy = tiny_policy()
    for _ in range(5):
        pool.add(policy, "simple")
    # 0 and 2 were archived when evicted (every 2nd), the archive keeps the newest one
    assert pool.ids() == [2, 3, 4]
    path = save_checkpoint(tmp_path / "pool.pt", {"selfplay": pool.state_dict()})
    saved = torch.load(path, weights_only=True)["selfplay"]  # format 2: no NumPy objects
    assert all(torch.is_tensor(v) for s in saved["recent"] for v in s["model"].values())
    restored = SnapshotPool(pool_size=2, archive_size=1, archive_every=2)
    # the encoder comes from the resumed run's config, not from the file
    restored.load_state_dict(load_checkpoint(path)["selfplay"], encoder="rich")
    assert restored.ids() == [2, 3, 4] and restored.next_id == 5
    for before, after in zip(pool.snapshots, restored.snapshots, strict=True):
        assert after["encoder"] == "rich" and after["policy"] == before["policy"]
        for name, weights in before["model"].items():  # NumPy again: what crosses the pipes
            assert isinstance(after["model"][name], np.ndarray)
            assert np.array_equal(after["model"][name], weights)
    assert restored.add(policy, "simple")["id"] == 5
    assert restored.ids() == [2, 4, 5]  # 3 is odd: dropped, not archived
    with pytest.raises(ValueError, match="pool_size"):
        SnapshotPool(pool_size=0)


def test_win_rates_per_opponent():
    columns = win_rate_columns(OmegaConf.create({"random": 0.5, "self": 0.5}))
    assert columns == ["win_rate/random", "win_rate/self"]
    rates = opponent_win_rates(
        columns, ["random", "self", "random", "random"], [True, False, False, True]
    )
    assert rates["win_rate/random"] == pytest.approx(2 / 3)
    assert rates["win_rate/self"] == 0.0
    assert math.isnan(opponent_win_rates(columns, [], [])["win_rate/self"])
    assert win_rate_columns("heuristic") == ["win_rate/heuristic"]


class Duel(gymnasium.Env):
    """Episodes of ``length`` steps against opponent ``k % 3``; won when the actions sum
    to at least ``length`` (action 1 every step)."""

    observation_space = gymnasium.spaces.Box(0, 1, (1,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)
    names = ("random", "self", "heuristic")

    def __init__(self, length: int = 3):
        self.length, self.episode, self.t, self.total = length, -1, 0, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode, self.t, self.total = self.episode + 1, 0, 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t, self.total = self.t + 1, self.total + int(action)
        if self.t < self.length:
            return np.zeros(1, np.float32), 0.0, False, False, {}
        info = {"won": self.total >= self.length, "opponent": self.names[self.episode % 3]}
        return np.zeros(1, np.float32), 0.0, True, False, info


@pytest.mark.parametrize("mode", [AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP])
def test_opponent_stats_reads_finished_episodes(mode):
    columns = win_rate_columns({"random": 1, "self": 1, "heuristic": 1})
    envs = OpponentStats(SyncVectorEnv([Duel, lambda: Duel(4)], autoreset_mode=mode), columns)
    envs.reset(seed=0)
    # env 0 always wins (action 1); env 1 wins only its first episode (then action 0)
    for t in range(14):
        envs.step(np.array([1, 1 if t < 4 else 0]))
    rates = envs.pop_win_rates()
    # env 0 wins every episode, env 1 only its first (vs random); both modes finish at
    # least 3 episodes per env (random, self, heuristic); SAME_STEP finishes a 4th on env 0
    # (vs random, won). NEXT_STEP spends a step per reset.
    assert rates == pytest.approx(
        {"win_rate/random": 1.0, "win_rate/self": 0.5, "win_rate/heuristic": 0.5}
    )
    popped = envs.pop_win_rates()
    assert popped.keys() == rates.keys() and all(math.isnan(v) for v in popped.values())
    envs.close()


def test_self_play_only_for_opponents_with_self():
    env_cfg = OmegaConf.create({"opponent": "random", "encoder": "simple"})
    assert SelfPlay.for_env(SelfPlayConfig(), env_cfg, envs=None) is None
    env_cfg.opponent = {"random": 0.5, "self": 0.5}
    selfplay = SelfPlay.for_env(SelfPlayConfig(every=3), env_cfg, envs=None)
    assert selfplay is not None and selfplay.encoder == "simple"
    with pytest.raises(ValueError, match="every"):
        SelfPlay(SelfPlayConfig(every=0), None, "simple")


def test_snapshots_play_with_the_runs_mask_futile():
    """A run with ``env.mask_futile`` pushes snapshots that mask futile moves as opponents
    too (the learner plays so); a resumed pool takes the resumed run's setting."""
    env_cfg = OmegaConf.create({"opponent": "self", "encoder": "simple", "mask_futile": True})
    selfplay = SelfPlay.for_env(SelfPlayConfig(every=1), env_cfg, PoolEcho())
    policy = tiny_policy()
    selfplay.start(policy)
    selfplay.after_update(policy, 1)
    assert [s.get("mask_futile") for s in selfplay.pool.snapshots] == [True, True]
    assert FrozenPolicy.from_snapshot(selfplay.pool.snapshots[-1]).mask_futile
    plain = SelfPlay(SelfPlayConfig(every=1), PoolEcho(), "simple")
    assert "mask_futile" not in plain.pool.add(policy, "simple")  # as before the setting
    state = pickle.loads(pickle.dumps(selfplay.state_dict()))
    plain.load_state_dict(state)
    assert not any(FrozenPolicy.from_snapshot(s).mask_futile for s in plain.pool.snapshots)
    selfplay.load_state_dict(state)
    assert all(FrozenPolicy.from_snapshot(s).mask_futile for s in selfplay.pool.snapshots)


@pytest.mark.integration
@pytest.mark.parametrize("sampling", ["uniform", "pfsp"])
def test_trainer_pushes_snapshots_to_workers_and_keeps_the_pool(
    showdown_server, tmp_path, sampling
):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(
            "config",
            overrides=[
                "+experiment=smoke",
                "env.opponent=self",
                "env.num_envs=2",
                f"env.server_url={showdown_server.server_configuration.websocket_url}",
                "selfplay.every=1",
                "selfplay.pool_size=2",
                f"selfplay.sampling={sampling}",
                "algo.rollout_steps=16",
                "total_steps=96",
                "tensorboard=false",
            ],
        )
    trainer = Trainer(to_train_config(cfg), tmp_path, OmegaConf.to_container(cfg))
    try:
        assert trainer.selfplay is not None
        first = trainer.selfplay.pool.snapshots[0]
        trainer.run()  # 3 updates: snapshots 1, 2, 3 pushed; the pool keeps the last 2
        assert trainer.selfplay.pool.ids() == [2, 3]
        stats = trainer.envs.call("call_opponent", "pool_stats")
        latest = checksum(trainer.policy)  # the last push follows the last update
        league = trainer.selfplay.league
        weights = {i: 1.0 for i in (2, 3)} if league is None else league.weights([2, 3])
    finally:
        trainer.close()
    assert len(stats) == 2
    for worker in stats:  # verified in every worker, through AsyncVectorEnv.call
        assert worker["ids"] == [2, 3]
        assert worker["weights"] == pytest.approx(weights)
        assert worker["checksums"][3] == pytest.approx(latest, rel=1e-6)
        assert worker["checksums"][3] != pytest.approx(checksum(policy_from_snapshot(first)))
    assert sum(worker["decisions"] for worker in stats) > 0  # the snapshots played

    with (tmp_path / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert rows[0].keys() >= {"win_rate/self", "win_rate"}
    assert all(r["win_rate/self"] == r["win_rate"] for r in rows)  # the only opponent
    saved = load_checkpoint(tmp_path / "checkpoints" / "last.pt")["selfplay"]
    assert [s["id"] for s in saved["recent"]] == [2, 3] and saved["next_id"] == 4


def test_promotion_gate_opens_only_at_the_threshold_over_a_full_window():
    gate = PromotionGate(threshold=0.6, window=5)
    gate.record(7, [(7, True)] * 4)
    assert not gate.is_open()  # 4 of 4 won, but the window is not full
    gate.record(7, [(6, True)] * 10)  # battles against older snapshots do not count
    assert len(gate.results) == 4
    gate.record(7, [(7, False)])
    assert gate.is_open() and gate.win_rate == 0.8
    gate.record(7, [(7, False)])  # the window slides: 3 of the last 5
    assert gate.is_open() and gate.win_rate == pytest.approx(0.6)
    gate.record(7, [(7, False)])  # 2 of 5
    assert not gate.is_open()


class PoolEcho:
    """A stand-in for the vector env's ``call``: every env keeps the pool it is sent."""

    num_envs = 2

    @property
    def unwrapped(self):
        return self

    def __init__(self):
        self.weights = []  # the weights of every push (a league's)

    def call(self, name, method, added, keep, *weights):
        assert (name, method) == ("call_opponent", "sync_pool")
        self.weights.extend(weights)
        return [list(keep)] * self.num_envs


def test_gated_self_play_promotes_only_past_the_threshold_and_keeps_its_window(caplog):
    caplog.set_level(logging.INFO, logger="trainer.run.selfplay")
    cfg = SelfPlayConfig(promote_win_rate=0.75, promote_window=4, pool_size=3)
    selfplay = SelfPlay(cfg, PoolEcho(), "simple")
    policy = tiny_policy()
    selfplay.start(policy)
    assert selfplay.pool.ids() == [0]
    assert selfplay.columns == ("selfplay/promotions", "selfplay/newest_win_rate")
    row = selfplay.after_update(policy, 10, [(0, True), (0, False), (0, True), (0, True)])
    assert row["selfplay/promotions"] == 1 and selfplay.pool.ids() == [0, 1]  # 3/4 = 0.75
    assert "promoted snapshot 1" in caplog.text
    row = selfplay.after_update(policy, 11, [(0, True)] * 4 + [(1, True), (1, False)])
    assert row == {"selfplay/newest_win_rate": 0.5, "selfplay/promotions": 1.0}
    row = selfplay.after_update(policy, 12, [(1, True), (1, False)])  # 2 of 4
    assert selfplay.pool.ids() == [0, 1] and row["selfplay/newest_win_rate"] == 0.5
    state = selfplay.state_dict()
    resumed = SelfPlay(cfg, PoolEcho(), "simple")
    resumed.load_state_dict(pickle.loads(pickle.dumps(state)))
    assert list(resumed.gate.results) == [True, False, True, False]
    assert resumed.promotions == 1 and resumed.pool.ids() == [0, 1]
    resumed.after_update(policy, 13, [(1, True)] * 3)  # last 4: F, T, T, T
    assert resumed.pool.ids() == [0, 1, 2] and resumed.promotions == 2


def test_every_k_schedule_stays_the_default():
    selfplay = SelfPlay(SelfPlayConfig(every=2), PoolEcho(), "simple")
    policy = tiny_policy()
    selfplay.start(policy)
    assert selfplay.columns == ("selfplay/promotions",)
    assert selfplay.after_update(policy, 1, [(0, True)] * 50)["selfplay/promotions"] == 0
    assert selfplay.after_update(policy, 2)["selfplay/promotions"] == 1
    assert selfplay.pool.ids() == [0, 1]


def test_league_weights_favour_the_members_the_learner_still_loses_to():
    league = League(power=2.0, window=4)
    assert league.weights([0]) == {0: 0.25}  # no result yet: p = 1/2
    league.record([(0, True)] * 6 + [(1, False)] * 2 + [(2, True), (2, False)])
    assert list(league.results[0]) == [True] * 4  # only the last `window` battles count
    assert league.win_rate(0) == pytest.approx(5 / 6)  # smoothed: (4 + 1) / (4 + 2)
    weights = league.weights([0, 1, 2])
    assert weights[1] > weights[2] > weights[0] > 0  # never beaten > even > always beaten
    assert weights[0] == pytest.approx((1 / 6) ** 2) and weights[1] == pytest.approx(0.75**2)
    assert league.metrics([0, 1, 2]) == {
        "selfplay/league_win_rate": pytest.approx(0.5),
        "selfplay/hardest_win_rate": 0.0,
    }
    league.forget_all_but([1, 2])
    assert set(league.results) == {1, 2}
    resumed = League(power=2.0, window=4)
    resumed.load_state_dict(pickle.loads(pickle.dumps(league.state_dict())))
    assert resumed.weights([1, 2]) == league.weights([1, 2])


def test_pfsp_self_play_pushes_the_league_weights_after_every_update():
    cfg = SelfPlayConfig(sampling="pfsp", every=2, pool_size=3)
    envs = PoolEcho()
    selfplay = SelfPlay(cfg, envs, "simple")
    policy = tiny_policy()
    selfplay.start(policy)
    assert selfplay.columns == (
        "selfplay/promotions",
        "selfplay/league_win_rate",
        "selfplay/hardest_win_rate",
    )
    assert envs.weights == [{0: 0.25}]
    row = selfplay.after_update(policy, 1, [(0, True)] * 8)
    assert envs.weights[-1] == {0: pytest.approx(0.01)}  # (1 - 9/10)^2
    assert row["selfplay/league_win_rate"] == 1.0 and row["selfplay/promotions"] == 0
    selfplay.after_update(policy, 2, [(0, False)] * 2)  # snapshot 1 joins at p = 1/2
    assert set(envs.weights[-1]) == {0, 1} and envs.weights[-1][1] == 0.25
    state = pickle.loads(pickle.dumps(selfplay.state_dict()))
    resumed = SelfPlay(cfg, PoolEcho(), "simple")
    resumed.load_state_dict(state)
    assert resumed.league.weights([0, 1]) == selfplay.league.weights([0, 1])


def test_a_pool_draws_its_snapshots_by_the_pushed_weights():
    from mapleenv.opponents import PolicyOpponent

    snapshots = [make_snapshot(tiny_policy(seed), "simple", seed) for seed in range(3)]
    opponent = PolicyOpponent(seed=0)
    opponent.sync_pool(snapshots, weights={0: 0.0, 1: 1.0, 2: 3.0})
    draws = [opponent._draw().id for _ in range(2000)]
    assert 0 not in draws
    assert draws.count(2) / len(draws) == pytest.approx(0.75, abs=0.04)
    assert opponent.pool_stats()["weights"] == {0: 0.0, 1: 1.0, 2: 3.0}
    opponent.sync_pool(keep=[1, 2], weights={})  # no weights: uniform again
    draws = [opponent._draw().id for _ in range(2000)]
    assert draws.count(1) / len(draws) == pytest.approx(0.5, abs=0.04)
    with pytest.raises(ValueError, match="finite and >= 0"):
        opponent.sync_pool(weights={1: -1.0})
