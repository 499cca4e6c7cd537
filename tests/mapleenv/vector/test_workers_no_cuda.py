"""Env workers never touch CUDA (DESIGN.md, contract 3), checked with a real training run.

The learner runs on CUDA where there is one (else on CPU) with ``policy:<checkpoint>`` and
self-play ``self`` opponents in its env workers. Every worker imports the ``cuda_guard``
plugin (tests/cuda_guard.py): it pretends a GPU is there and makes CUDA's initialisation
raise, so a worker that would load a policy or a snapshot onto CUDA fails the run on any
machine; on a machine with CUDA the driver's own list of the processes holding a GPU context
(``nvidia-smi``), where it names the trainer, must name no worker. (Not the workers' memory
maps: a CUDA build of torch maps ``libcuda`` at import, before anything asks for a GPU; seen
on an H200 machine with torch 2.11.0+cu130, docs/gpu.md.)
"""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest
import torch
from cuda_guard import MESSAGE
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from mapleenv.measure import gpu_context_pids
from mapleenv.vector.local import make_vector_env
from trainer.config import to_train_config
from trainer.run.train import Trainer

ROOT = Path(__file__).resolve().parents[3]
POLICY = ROOT / "models" / "attention_ppo_gen9random.pt"


@pytest.mark.integration
@pytest.mark.timeout(300)
@pytest.mark.parametrize("per_worker", [1, 2])
def test_workers_with_policy_and_selfplay_opponents_never_initialise_cuda(
    tmp_path: Path, per_worker: int
) -> None:
    """Also with two battles per worker (``env.battles_per_worker``): the self-play pool
    reaches every battle of a group."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    overrides = ["+experiment=smoke", f"device={device}", "tensorboard=false"]
    overrides += ["env.num_envs=2", "selfplay.every=1", "algo.rollout_steps=16"]
    overrides += [f"env.battles_per_worker={per_worker}"]
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    cfg.env.opponent = {"self": 1.0, f"policy:{POLICY}": 1.0}
    cfg.env.plugins = ["cuda_guard"]
    raw = OmegaConf.to_container(cfg, resolve=True)
    trainer = Trainer(to_train_config(cfg), tmp_path, raw)
    try:
        rows = [trainer.train_iteration() for _ in range(2)]  # a self-play push after each
        assert trainer.selfplay is not None and trainer.selfplay.pushes >= 2
        assert next(trainer.policy.parameters()).device.type == device
        workers = [p.pid for p in psutil.Process().children(recursive=True)]
        assert workers
        contexts = gpu_context_pids() if device == "cuda" else None
        # read only where the driver's list names this process (in a container with its own
        # process ids nvidia-smi lists none of them)
        if contexts is not None and os.getpid() in contexts:
            assert not set(workers) & set(contexts)
    finally:
        trainer.close()
    assert all(row["episodes_aborted"] == 0 for row in rows)


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_the_guard_fires_in_a_worker_that_touches_cuda(capfd: pytest.CaptureFixture) -> None:
    """The negative control: an opponent that puts a tensor on CUDA while its worker builds
    the env ends that worker with the guard's message (on its stderr), and the worker saw
    no GPU (``CUDA_VISIBLE_DEVICES`` empty: mapleenv.vector.group.hide_gpus)."""
    with pytest.raises((RuntimeError, ConnectionError, EOFError)):
        envs = make_vector_env(1, opponent="cuda_probe", plugins=["cuda_guard"], sim_hosts=1)
        try:
            envs.reset(seed=0)
        finally:
            envs.close()
    assert f"{MESSAGE} (CUDA_VISIBLE_DEVICES='')" in capfd.readouterr().err
