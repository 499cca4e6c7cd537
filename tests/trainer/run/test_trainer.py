"""End-to-end training: memory task (LSTM vs MLP), CLI outputs, devices."""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from memory_env import MEMORY_OVERRIDES, register_memory_env
from warm_cli import run_python

from trainer.__main__ import CONF_DIR
from trainer.run.device import resolve_device
from trainer.run.metrics import COLUMNS
from trainer.run.train import train

ROOT = Path(__file__).resolve().parents[3]


def run_memory(tmp_path: Path, *overrides: str) -> list[dict[str, str]]:
    register_memory_env()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("config", overrides=[*MEMORY_OVERRIDES, *overrides])
    train(cfg, tmp_path)
    with (tmp_path / "metrics.csv").open() as f:
        return list(csv.DictReader(f))


def late_return(rows: list[dict[str, str]], last: int = 4) -> float:
    values = [float(r["episode_return"]) for r in rows[-last:]]
    return sum(values) / len(values)


@pytest.mark.slow
def test_lstm_learns_a_memory_task_that_an_mlp_cannot(tmp_path: Path) -> None:
    # Recall a cue shown 4 steps earlier: +1 right, -1 wrong; memoryless optimum is 0.
    steps = "total_steps=12288"  # 24 iterations of 512 steps
    lstm = run_memory(tmp_path / "lstm", "model=lstm", steps, "seed=3")
    mlp = run_memory(tmp_path / "mlp", "model=mlp", "model.encoder_sizes=[32,32]", steps, "seed=3")
    assert late_return(lstm) > 0.8, [r["episode_return"] for r in lstm]
    assert late_return(mlp) < 0.4, [r["episode_return"] for r in mlp]
    assert float(lstm[-1]["win_rate"]) > 0.85  # the env reports `won`


@pytest.mark.integration
def test_cli_trains_a_gym_env_and_writes_every_output(tmp_path: Path) -> None:
    proc = run_python(
        [
            sys.executable,
            "-m",
            "trainer",
            "env=gym",
            "env.id=CartPole-v1",
            "env.num_envs=4",
            "algo.rollout_steps=32",
            "algo.bptt=8",
            "total_steps=384",
            "checkpoint_every=2",
            "log_every=1",
            "device=auto",
            f"hydra.run.dir={tmp_path}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = proc.stdout + proc.stderr
    assert "device: cpu (requested auto)" in log or "device: cuda" in log
    # done of total and the time left (run/progress.py); the last iteration: nothing left
    assert "iter 1 | step 128/384 (33%) | eta " in log
    assert "iter 3 | step 384/384 (100%) | eta 0s | sps" in log
    with (tmp_path / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == COLUMNS
    assert [int(r["global_step"]) for r in rows] == [128, 256, 384]
    assert all(float(r["sps"]) > 0 and float(r["episode_return"]) > 0 for r in rows)
    assert all(r["win_rate"] == "" for r in rows)  # CartPole reports no `won`
    assert (tmp_path / "config.yaml").read_text().count("CartPole-v1") == 1
    assert (tmp_path / ".hydra" / "overrides.yaml").is_file()
    assert list((tmp_path / "tensorboard").glob("events.out.tfevents.*"))
    ckpts = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert ckpts == ["last.pt", "step_0000000256.pt"]


def test_auto_device_prefers_cuda_then_mps_then_cpu() -> None:
    device = resolve_device("auto")
    if torch.cuda.is_available():
        assert device.type == "cuda"
    elif torch.backends.mps.is_available():
        assert device.type == "mps"
    else:
        assert device == torch.device("cpu")
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            resolve_device("cuda")


def test_unregistered_gym_id_fails_clearly(tmp_path: Path) -> None:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("config", overrides=["env=gym", "env.id=NoSuchEnv-v0", "device=cpu"])
    with pytest.raises(ValueError, match="NoSuchEnv-v0.*not a registered Gymnasium env"):
        train(cfg, tmp_path)


class _ScriptedClock:
    """``time`` for trainer.run.train whose ``perf_counter`` moves only by the scripted
    iteration lengths (plus a microsecond a read): the stop rule is checked without
    depending on the box's speed."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 1e-6
        return self.now

    def __getattr__(self, name: str):
        return getattr(time, name)


@pytest.mark.integration
def test_max_minutes_stops_the_run_anneals_by_time_and_adds_up_over_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainer.run import train as train_module
    from trainer.run.checkpoint import load_checkpoint

    common = [
        "env=gym",
        "env.id=CartPole-v1",
        "env.num_envs=2",
        "model=mlp",
        "algo.rollout_steps=16",
        "algo.bptt=0",
        "algo.epochs=1",
        "total_steps=100000000",  # far away: time ends these runs
        "tensorboard=false",
        "checkpoint_every=0",
    ]
    clock = _ScriptedClock()
    lengths = iter([0.3, 0.7] + [0.3] * 100)  # one long iteration early on
    monkeypatch.setattr(train_module, "time", clock)
    iterate = train_module.Trainer.train_iteration

    def scripted_iteration(self):
        row = iterate(self)
        clock.now += next(lengths)
        return row

    monkeypatch.setattr(train_module.Trainer, "train_iteration", scripted_iteration)

    def run(minutes: float, *extra: str) -> list[dict[str, str]]:
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            cfg = compose("config", overrides=[*common, f"max_minutes={minutes}", *extra])
        train(cfg, tmp_path)
        with (tmp_path / "metrics.csv").open() as f:
            return list(csv.DictReader(f))

    rows = run(0.04)  # 2.4 s
    ckpt = load_checkpoint(tmp_path)
    # the run stops when one more iteration as long as the longest (0.7 s, not the last
    # 0.3 s) would pass the budget: after 0.3 + 0.7 + 3 * 0.3 = 1.9 s (1.9 + 0.7 > 2.4)
    assert len(rows) == 5
    assert ckpt["train_seconds"] == pytest.approx(1.9, abs=1e-3)
    assert ckpt["iteration_seconds"] == pytest.approx(0.7, abs=1e-3)
    lrs = [float(r["lr"]) for r in rows]  # annealed by time: 1 - seconds / budget
    assert lrs == pytest.approx([3e-4 * (1 - t / 2.4) for t in (0, 0.3, 1.0, 1.3, 1.6)], rel=1e-3)

    rows = run(0.08, f"resume={tmp_path}")  # the budget counts the first segment too
    ckpt = load_checkpoint(tmp_path)
    # 1.9 s + 8 * 0.3 s = 4.3 s: one more 0.7 s iteration would end at 5.0 s, past 4.8 s
    assert len(rows) == 5 + 8
    assert ckpt["train_seconds"] == pytest.approx(4.3, abs=1e-3)
    resumed = [float(r["lr"]) for r in rows[len(lrs) :]]
    assert resumed[0] == pytest.approx(3e-4 * (1 - 1.9 / 4.8), rel=1e-3)
    assert resumed == sorted(resumed, reverse=True) and resumed[-1] < resumed[0]


def test_the_update_uses_its_own_thread_count_and_the_rollout_gets_its_own_back(
    tmp_path: Path,
) -> None:
    """The envs wait during the update, so it may use every core; the rollout, which shares
    the CPU with them, keeps ``torch_threads``."""
    from omegaconf import OmegaConf

    from trainer.config import to_train_config
    from trainer.run.train import Trainer

    overrides = ["env=gym", "env.id=CartPole-v1", "env.num_envs=2", "model=mlp"]
    overrides += ["algo.rollout_steps=8", "algo.bptt=0", "algo.epochs=1", "device=cpu"]
    overrides += ["torch_threads=1", "torch_update_threads=2", "tensorboard=false"]
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    before = torch.get_num_threads()
    trainer = Trainer(to_train_config(cfg), tmp_path, OmegaConf.to_container(cfg))
    seen: dict[str, list[int]] = {"collect": [], "update": []}
    collect, update = trainer.collector.collect, trainer.learner.update

    def collect_and_note(*args, **kwargs):
        seen["collect"].append(torch.get_num_threads())
        return collect(*args, **kwargs)

    def update_and_note(*args, **kwargs):
        seen["update"].append(torch.get_num_threads())
        return update(*args, **kwargs)

    trainer.collector.collect, trainer.learner.update = collect_and_note, update_and_note
    try:
        for _ in range(2):
            trainer.train_iteration()
        assert torch.get_num_threads() == 1
    finally:
        trainer.close()
        torch.set_num_threads(before)
    assert seen == {"collect": [1, 1], "update": [2, 2]}


@pytest.mark.parametrize("saved", [True, False])
def test_a_showdown_error_stop_says_how_to_resume_once_a_checkpoint_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture, saved: bool
) -> None:
    """A Showdown error (a server that refuses battles, ...) ends the run with one line; once
    the run saved a checkpoint, the line also says where it is and how to continue."""
    import trainer.__main__ as cli
    import trainer.run.train
    from mapleenv.showdown.package import ShowdownError

    def failing_train(cfg, run_dir, checked=None) -> None:
        if saved:
            (Path(run_dir) / "checkpoints").mkdir(parents=True)
            (Path(run_dir) / "checkpoints" / "last.pt").write_bytes(b"")
        raise ShowdownError("the server refused the challenge: lockdown")

    monkeypatch.setattr(trainer.run.train, "train", failing_train)
    monkeypatch.setattr(sys, "argv", ["trainer", "env=gym", f"hydra.run.dir={tmp_path}"])
    with pytest.raises(SystemExit) as stop:
        cli.main()
    assert stop.value.code == 1
    out = capfd.readouterr()
    assert "[ERROR]" not in out.out  # the console log is on stderr (conf/hydra/job_logging)
    lines = [line for line in out.err.splitlines() if "[ERROR]" in line]
    assert len(lines) == 1 and "the server refused the challenge: lockdown" in lines[0]
    hint = f"; last checkpoint: {tmp_path}/checkpoints/last.pt (continue with resume={tmp_path})"
    assert lines[0].endswith(hint) == saved, lines
