"""The CI smoke experiment end to end on both backends: one env, three rollouts."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import torch
from builders import run_module
from omegaconf import OmegaConf

from mapleenv.policies import policy_from_snapshot
from trainer.run.checkpoint import load_checkpoint

# the tests marked backends use the default backend: the CI's second pass repeats them with
# MAPLE_BACKEND=server (the others name their backend, or start no env)

ROOT = Path(__file__).resolve().parents[3]


def metrics_rows(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "metrics.csv").open() as f:
        return list(csv.DictReader(f))


@pytest.mark.integration
@pytest.mark.timeout(300)
@pytest.mark.parametrize("backend", ["direct", "server"])
def test_smoke_experiment_trains(tmp_path: Path, backend: str) -> None:
    # No server_url: the run starts its own simulator hosts or server.
    proc = run_module(
        "trainer",
        "+experiment=smoke",
        f"hydra.run.dir={tmp_path}",
        f"env.backend={backend}",
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "device: cpu" in out and "autoreset mode SAME_STEP" in out
    assert f"{backend} backend" in out
    if backend == "server":
        assert "stopping Showdown" in out  # the run's server is stopped on close
        assert list((tmp_path / "showdown").glob("*.log"))  # server log kept in the run dir
    rows = metrics_rows(tmp_path)
    assert [int(r["global_step"]) for r in rows] == [32, 64, 96]
    for r in rows:
        assert float(r["sps"]) > 0 and r["policy_loss"] != "" and r["entropy"] != ""
        if int(r["episodes"]):
            assert 0.0 <= float(r["win_rate"]) <= 1.0
    ckpt = load_checkpoint(tmp_path)
    assert ckpt["global_step"] == 96
    ckpt = load_checkpoint(tmp_path / "checkpoints" / "last.pt")
    policy, cfg = policy_from_snapshot(ckpt), OmegaConf.create(ckpt["config"])
    assert cfg.env.kind == "showdown" and cfg.name == "smoke"
    obs = torch.zeros(1, policy.obs_dim)
    mask = torch.zeros(1, policy.n_actions, dtype=torch.bool)
    mask[0, 3] = True
    logits, _, _ = policy(obs, mask, policy.initial_state(1), torch.ones(1))
    assert torch.softmax(logits, -1)[0, 3] == 1.0


@pytest.mark.backends
@pytest.mark.integration
@pytest.mark.timeout(300)
def test_kickstarting_from_the_heuristic_teacher(tmp_path: Path) -> None:
    proc = run_module(
        "trainer",
        "+experiment=smoke",
        f"hydra.run.dir={tmp_path}",
        "env.teacher=heuristic",
        "algo.kickstart_coef=1.0",
        "algo.kickstart_steps=64",
        "tensorboard=false",
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    rows = metrics_rows(tmp_path)
    # the coefficient decays linearly to 0 over 64 steps (logged after each 32-step update)
    assert [float(r["kickstart_coef"]) for r in rows] == [1.0, 0.5, 0.0]
    for r in rows[:2]:
        assert float(r["kickstart_loss"]) > 0 and 0 <= float(r["teacher_agreement"]) <= 1
    # from step 64 the weight is 0 for good: the teacher is off
    # (tests/trainer/run/test_teacher_gating.py)
    assert rows[2]["kickstart_loss"] == rows[2]["teacher_agreement"] == ""


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_auxiliary_opponent_action_head(tmp_path: Path) -> None:
    """``algo.aux_coef`` with ``model.aux_classes``: the env labels the opponent's actions,
    the loss trains the head, metrics.csv has aux_loss/aux_accuracy, the checkpoint keeps it."""
    proc = run_module(
        "trainer",
        "+experiment=smoke",
        f"hydra.run.dir={tmp_path}",
        "env.backend=direct",
        "algo.aux_coef=0.5",
        "model.aux_classes=4",
        "tensorboard=false",
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    rows = metrics_rows(tmp_path)
    assert len(rows) == 3 and "kickstart_loss" not in rows[0]
    for r in rows:
        assert float(r["aux_loss"]) > 0 and 0 <= float(r["aux_accuracy"]) <= 1
    policy = policy_from_snapshot(load_checkpoint(tmp_path))
    assert policy.cfg.aux_classes == 4 and policy.aux_head is not None


@pytest.mark.backends
@pytest.mark.integration
@pytest.mark.timeout(400)
def test_attention_policy_clones_then_trains_with_self_play(tmp_path: Path) -> None:
    """model=attention on the rich encoder: a cloning phase, then PPO with the cloning loss
    fading, snapshots of the attention policy playing in the env workers; its checkpoint
    then plays the shipped LSTM agent head to head."""
    proc = run_module(
        "trainer",
        "+experiment=smoke",
        f"hydra.run.dir={tmp_path}",
        "model=attention",
        "model.token_size=16",
        "model.attention_heads=2",
        "env.encoder=rich",
        "env.teacher=heuristic",
        "env.opponent={random: 0.5, self: 0.5}",
        "selfplay.every=1",
        "algo.kickstart_coef=1.0",
        "algo.bc_steps=32",
        "algo.kickstart_steps=96",
        "tensorboard=false",
        timeout=380,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    rows = metrics_rows(tmp_path)
    # iteration 1 clones (step 0 < 32); then PPO, the weight fading from 1 at 32 to 0 at 96
    assert [float(r["bc"]) for r in rows] == [1.0, 0.0, 0.0]
    assert [float(r["kickstart_coef"]) for r in rows] == [1.0, 1.0, 0.5]
    ckpt = load_checkpoint(tmp_path)
    assert ckpt["policy"]["model"]["kind"] == "attention" and ckpt["selfplay"] is not None
    out = tmp_path / "h2h"
    proc = run_module(
        "trainer.evaluate",
        f"checkpoint={tmp_path}",
        f"opponents=[policy:{ROOT / 'models' / 'attention_ppo_gen9random.pt'}]",
        "battles=2",
        "num_envs=1",
        f"hydra.run.dir={out}",
        timeout=300,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    result = json.loads((out / "evaluation.json").read_text())
    ((name, stats),) = result["opponents"].items()
    assert name.startswith("policy:") and stats["battles"] == 2


@pytest.mark.integration
def test_kickstarting_without_a_teacher_is_a_config_error(tmp_path: Path) -> None:
    proc = run_module(
        "trainer",
        "+experiment=smoke",
        f"hydra.run.dir={tmp_path}",
        "algo.kickstart_coef=1.0",
        timeout=120,
    )
    assert proc.returncode == 2 and "needs env.teacher" in proc.stderr + proc.stdout
