"""Checkpoints: atomic writes, rebuilding the policy without Hydra, resume, Ctrl-C."""

from __future__ import annotations

import contextlib
import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium
import numpy as np
import pytest
import torch
from memory_env import (
    ITER_STEPS,
    MEMORY_ENV_ID,
    memory_cfg,
)
from omegaconf import OmegaConf
from warm_cli import run_python

from mapleenv.policies import build_policy, make_snapshot, policy_from_snapshot
from trainer.config import ConfigError
from trainer.envs.vector import terminate_envs
from trainer.run.checkpoint import (
    CheckpointError,
    check_pool,
    load_checkpoint,
    resolve_checkpoint,
    save_checkpoint,
)
from trainer.run.metrics import MetricsLogger
from trainer.run.train import train

ROOT = Path(__file__).resolve().parents[3]


def read_metrics(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "metrics.csv").open() as f:
        return list(csv.DictReader(f))


def test_save_is_atomic_and_leaves_no_temp_files(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "checkpoints" / "last.pt"
    save_checkpoint(path, {"global_step": 1})
    assert load_checkpoint(path)["global_step"] == 1

    def broken_save(obj, f, *args, **kwargs):
        f.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(path, {"global_step": 2})
    assert load_checkpoint(path)["global_step"] == 1  # the old file is intact
    assert [p.name for p in path.parent.iterdir()] == ["last.pt"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_a_save_waits_until_the_file_is_written(
    tmp_path: Path, monkeypatch, signum: int
) -> None:
    """Ctrl-C or SIGTERM while ``torch.save`` writes: the file is finished first, then the
    handler runs (a cut write once ended a run with a traceback and no final save)."""
    path = tmp_path / "last.pt"
    real_save = torch.save
    handled: list[int] = []

    def interrupt(n: int, _frame: object) -> None:
        handled.append(n)
        raise KeyboardInterrupt

    def interrupted_save(obj, f, *args, **kwargs):
        os.kill(os.getpid(), signum)  # arrives mid-write
        for _ in range(1000):  # Python runs handlers between bytecodes: give it many
            pass
        real_save(obj, f, *args, **kwargs)

    previous = signal.signal(signum, interrupt)
    try:
        monkeypatch.setattr(torch, "save", interrupted_save)
        with pytest.raises(KeyboardInterrupt):
            save_checkpoint(path, {"global_step": 3})
        assert handled == [signum]
        assert signal.getsignal(signum) is interrupt  # the handler is back
    finally:
        signal.signal(signum, previous)
    assert load_checkpoint(path)["global_step"] == 3


def test_resolve_checkpoint_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no checkpoints/last.pt"):
        resolve_checkpoint(tmp_path)
    with pytest.raises(FileNotFoundError, match="checkpoint not found"):
        resolve_checkpoint(tmp_path / "nope.pt")
    (tmp_path / "x.pt").write_bytes(b"")
    torch.save({"hello": 1}, tmp_path / "x.pt")
    with pytest.raises(CheckpointError, match="not a Maple checkpoint"):
        load_checkpoint(tmp_path / "x.pt")


@pytest.mark.integration
def test_resume_continues_from_the_saved_step(tmp_path: Path) -> None:
    run = tmp_path / "run"
    train(memory_cfg(f"total_steps={2 * ITER_STEPS}", "checkpoint_every=1"), run)
    ckpt = load_checkpoint(run)
    assert ckpt["global_step"] == 2 * ITER_STEPS and ckpt["iteration"] == 2
    assert (run / "checkpoints" / f"step_{2 * ITER_STEPS:010d}.pt").is_file()
    saved = ckpt["model"]

    # Resume into the same run dir (the Hydra dir given here is ignored for outputs).
    other = tmp_path / "hydra_dir"
    train(memory_cfg(f"total_steps={4 * ITER_STEPS}", f"resume={run}"), other)
    rows = read_metrics(run)
    assert [int(r["global_step"]) for r in rows] == [ITER_STEPS * k for k in (1, 2, 3, 4)]
    assert [int(r["iteration"]) for r in rows] == [1, 2, 3, 4]
    assert load_checkpoint(run)["global_step"] == 4 * ITER_STEPS
    assert not (other / "metrics.csv").exists()
    # Resuming restored the weights: the first resumed iteration started from them.
    resumed = load_checkpoint(run / "checkpoints" / f"step_{2 * ITER_STEPS:010d}.pt")["model"]
    assert all(torch.equal(saved[k], resumed[k]) for k in saved)


@pytest.mark.integration
def test_resume_with_a_different_model_fails_clearly(tmp_path: Path) -> None:
    train(memory_cfg(f"total_steps={ITER_STEPS}"), tmp_path)
    config = (tmp_path / "config.yaml").read_text()
    with pytest.raises(ConfigError, match="different model"):
        train(
            memory_cfg(
                f"total_steps={2 * ITER_STEPS}", "model.hidden_size=16", f"resume={tmp_path}"
            ),
            tmp_path,
        )
    assert (tmp_path / "config.yaml").read_text() == config  # the rejected config not written


@pytest.mark.integration
def test_resume_with_weights_that_do_not_fit_the_spec_fails_clearly(tmp_path: Path) -> None:
    """A sent checkpoint whose spec matches this config but whose weights do not: one
    line naming the file (was a RuntimeError traceback from load_state_dict)."""
    train(memory_cfg(f"total_steps={ITER_STEPS}"), tmp_path)
    last = tmp_path / "checkpoints" / "last.pt"
    ckpt = load_checkpoint(last)
    name, weight = next(iter(ckpt["model"].items()))
    ckpt["model"][name] = torch.zeros(weight.shape[0] + 1, *weight.shape[1:])
    torch.save(ckpt, last)
    with pytest.raises(CheckpointError, match=f"its weight '{name}' has shape") as info:
        train(memory_cfg(f"total_steps={2 * ITER_STEPS}", f"resume={tmp_path}"), tmp_path)
    assert str(last) in str(info.value) and "\n" not in str(info.value)


@pytest.mark.integration
def test_resume_with_an_optimizer_state_that_does_not_fit_fails_clearly(tmp_path: Path) -> None:
    """A sent checkpoint whose optimizer state is not this network's: one line naming the
    file (was a ValueError traceback from the optimizer)."""
    train(memory_cfg(f"total_steps={ITER_STEPS}"), tmp_path)
    last = tmp_path / "checkpoints" / "last.pt"
    ckpt = load_checkpoint(last)
    ckpt["optimizer"]["param_groups"] *= 2
    torch.save(ckpt, last)
    with pytest.raises(CheckpointError, match="training state does not fit") as info:
        train(memory_cfg(f"total_steps={2 * ITER_STEPS}", f"resume={tmp_path}"), tmp_path)
    assert str(last) in str(info.value) and "\n" not in str(info.value)


def test_a_self_play_member_whose_weights_do_not_fit_is_refused_before_any_worker() -> None:
    policy = build_policy(8, 4, {"kind": "mlp", "encoder_sizes": [16]})
    # as a checkpoint holds its pool: the snapshots' weights as tensors
    good, bad = (
        {**snap, "model": {k: torch.from_numpy(v) for k, v in snap["model"].items()}}
        for snap in (make_snapshot(policy, "simple", i) for i in (1, 2))
    )
    name = next(iter(bad["model"]))
    bad["model"][name] = torch.zeros(3, 3)
    check_pool({"selfplay": {"recent": [good], "archive": []}}, "x.pt")  # fits: no error
    check_pool({}, "x.pt")  # no pool: nothing to check
    with pytest.raises(CheckpointError, match=r"x\.pt \(self-play member 2\).*has shape"):
        check_pool({"selfplay": {"recent": [good], "archive": [bad]}}, "x.pt")
    with pytest.raises(CheckpointError, match="not a snapshot"):
        check_pool({"selfplay": {"recent": ["nope"], "archive": []}}, "x.pt")
    with pytest.raises(CheckpointError, match="training state does not fit"):
        check_pool({"selfplay": {"recent": 3}}, "x.pt")


@pytest.mark.integration
def test_resume_drops_metrics_rows_the_checkpoint_never_saw(tmp_path: Path) -> None:
    """A kill between the metrics write and the checkpoint save leaves a row of an iteration
    the checkpoint does not have; the resumed run writes that iteration again, once."""
    train(memory_cfg(f"total_steps={2 * ITER_STEPS}"), tmp_path)
    rows = read_metrics(tmp_path)
    with (tmp_path / "metrics.csv").open("a", newline="") as f:
        orphan = dict(rows[-1], iteration="3", global_step=str(3 * ITER_STEPS))
        csv.DictWriter(f, fieldnames=list(rows[0])).writerow(orphan)
    stale = tmp_path / "checkpoints" / ".last.pt.abc123.tmp"  # a writer killed mid-save
    stale.write_bytes(b"partial")
    train(memory_cfg(f"total_steps={4 * ITER_STEPS}", f"resume={tmp_path}"), tmp_path)
    assert [int(r["iteration"]) for r in read_metrics(tmp_path)] == [1, 2, 3, 4]
    assert not stale.exists()


@pytest.mark.integration
@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_an_unreadable_checkpoint_is_one_clear_error_naming_the_file(
    tmp_path: Path, damage: str
) -> None:
    path = tmp_path / "last.pt"
    save_checkpoint(path, {"global_step": 1, "model": {"w": torch.zeros(1000)}})
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if damage == "truncated" else os.urandom(len(data)))
    with pytest.raises(CheckpointError, match=f"cannot read checkpoint {path}"):
        load_checkpoint(path)
    proc = run_python(
        [
            sys.executable,
            "-m",
            "trainer",
            "env=gym",
            "env.id=CartPole-v1",
            f"resume={path}",
            f"hydra.run.dir={tmp_path / 'run'}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert f"cannot read checkpoint {path}" in proc.stderr and proc.stdout == ""
    assert "Traceback" not in proc.stderr


def test_a_failed_write_names_the_checkpoint_and_keeps_the_old_one(tmp_path: Path) -> None:
    path = tmp_path / "checkpoints" / "last.pt"
    save_checkpoint(path, {"global_step": 1})
    with pytest.raises(OSError, match=f"could not write checkpoint {path}"):
        save_checkpoint(path, {"global_step": 2, "unpicklable": lambda: None})
    assert load_checkpoint(path)["global_step"] == 1
    assert [p.name for p in path.parent.iterdir()] == ["last.pt"]


def test_load_policy_rebuilds_the_policy_without_hydra(tmp_path: Path) -> None:
    train(memory_cfg(f"total_steps={ITER_STEPS}"), tmp_path)
    ckpt = load_checkpoint(tmp_path / "checkpoints" / "last.pt")
    policy, cfg = policy_from_snapshot(ckpt), OmegaConf.create(ckpt["config"])
    assert cfg.model.hidden_size == 32 and cfg.env.id == MEMORY_ENV_ID
    assert not policy.training and policy.recurrent
    ckpt = load_checkpoint(tmp_path)
    assert all(torch.equal(v, ckpt["model"][k]) for k, v in policy.state_dict().items())
    obs = torch.zeros(2, 3)
    logits, value, hidden = policy(
        obs, torch.ones(2, 2, dtype=torch.bool), policy.initial_state(2), torch.ones(2)
    )
    assert logits.shape == (2, 2) and value.shape == (2,) and hidden[0].shape == (1, 2, 32)


# ``python -m trainer`` whose final save (the first after a Ctrl-C, SIGINT ignored by then)
# says so in the file argv[1] + ".saving" and waits for argv[1] + ".go": the test places its
# second Ctrl-C inside that save by a condition, not by a sleep.
_HOLD_FINAL_SAVE = """
import runpy, signal, sys, time
from pathlib import Path
import trainer.run.train as train_module
marker = sys.argv.pop(1)
real_save = train_module.save_checkpoint
def held_save(*args, **kwargs):
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN and not Path(marker + ".saving").exists():
        Path(marker + ".saving").touch()
        deadline = time.monotonic() + 60
        while not Path(marker + ".go").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
    return real_save(*args, **kwargs)
train_module.save_checkpoint = held_save
sys.argv[0] = "trainer"
runpy.run_module("trainer", run_name="__main__", alter_sys=True)
"""


def _wait_for(path: Path, proc: subprocess.Popen, seconds: float) -> None:
    """Wait until ``path`` exists (the run still going), or fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"{path.name} never appeared (exit code {proc.poll()})")
        time.sleep(0.01)


def _start_endless_run(tmp_path: Path, hold_final_save: str | None = None) -> subprocess.Popen:
    """An endless CartPole run with async env workers, in its own process group, once it
    has written metrics; with ``hold_final_save`` (a path prefix) its final save waits
    (``_HOLD_FINAL_SAVE``)."""
    launch = ["-c", _HOLD_FINAL_SAVE, hold_final_save] if hold_final_save else ["-m", "trainer"]
    proc = subprocess.Popen(
        [
            sys.executable,
            *launch,
            "env=gym",
            "env.id=CartPole-v1",
            "env.num_envs=2",
            "env.vectorization=async",
            "algo.rollout_steps=16",
            "model.hidden_size=16",
            "model.encoder_sizes=[16]",
            "total_steps=100000000",
            "tensorboard=false",
            "device=cpu",
            f"hydra.run.dir={tmp_path}",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        metrics = tmp_path / "metrics.csv"
        if metrics.exists() and len(metrics.read_text().splitlines()) >= 3:
            return proc
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    pytest.fail("the run wrote no metrics")


def _assert_final_checkpoint(tmp_path: Path, returncode: int, out: str) -> None:
    assert returncode == 130, out[-3000:]
    assert "interrupted at step" in out
    assert "Traceback" not in out and "closing envs failed" not in out, out[-3000:]
    rows = read_metrics(tmp_path)
    ckpt = load_checkpoint(tmp_path)
    assert ckpt["global_step"] >= int(rows[-1]["global_step"]) >= 64


@pytest.mark.integration
def test_ctrl_c_saves_a_final_checkpoint(tmp_path: Path) -> None:
    # Like Ctrl-C in a terminal: SIGINT to the whole process group (trainer and its async
    # env workers), then a second one while the final checkpoint is being written.
    hold = str(tmp_path / "final_save")
    proc = _start_endless_run(tmp_path, hold_final_save=hold)
    try:
        os.killpg(proc.pid, signal.SIGINT)
        _wait_for(Path(hold + ".saving"), proc, 60)  # the final save has begun
        os.killpg(proc.pid, signal.SIGINT)
        Path(hold + ".go").touch()
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    _assert_final_checkpoint(tmp_path, proc.returncode, out)


@pytest.mark.integration
def test_sigterm_saves_a_final_checkpoint_and_closes_workers(tmp_path: Path) -> None:
    # Like `kill PID` or a scheduler: SIGTERM to the trainer process only.
    proc = _start_endless_run(tmp_path)
    try:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(proc.pid, 0)  # any process of the run (an env worker) left?
            except ProcessLookupError:
                break
            time.sleep(0.2)
        else:
            pytest.fail("env worker processes outlived the trainer")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    _assert_final_checkpoint(tmp_path, proc.returncode, out)


@pytest.mark.integration
def test_terminate_envs_does_not_wait_for_a_step_whose_workers_are_gone() -> None:
    # What Ctrl-C leaves behind: a step in flight and workers already dead. Gymnasium's own
    # close(terminate=True) would read that step's replies from the dead pipes (EOFError).
    envs = gymnasium.vector.AsyncVectorEnv(
        [lambda: gymnasium.make("CartPole-v1")] * 2, context="spawn"
    )
    envs.reset(seed=0)
    envs.step_async(np.zeros(2, dtype=np.int64))
    for process in envs.processes:
        os.kill(process.pid, signal.SIGKILL)
        process.join(10)
    terminate_envs(envs)
    assert envs.closed
    assert not any(process.is_alive() for process in envs.processes)


def test_resumed_metrics_with_new_columns_keep_every_row_under_its_header(tmp_path: Path) -> None:
    # e.g. a run resumed with a teacher or another opponent: rows must not shift columns
    first = MetricsLogger(tmp_path, tensorboard=False, extra_columns=("win_rate/random",))
    first.write({"iteration": 1, "global_step": 64, "win_rate/random": 0.5})
    first.close()
    second = MetricsLogger(
        tmp_path, tensorboard=False, extra_columns=("win_rate/heuristic", "win_rate/random")
    )
    second.write(
        {"iteration": 2, "global_step": 128, "win_rate/heuristic": 0.25, "win_rate/random": 0.75}
    )
    second.close()
    rows = read_metrics(tmp_path)
    assert [(r["global_step"], r["win_rate/random"], r["win_rate/heuristic"]) for r in rows] == [
        ("64", "0.5", ""),
        ("128", "0.75", "0.25"),
    ]
    assert not list(tmp_path.glob("*.tmp"))
