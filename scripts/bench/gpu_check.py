#!/usr/bin/env python
"""The GPU check: Maple's learner on a device against the CPU, one JSON line per part.

    python scripts/bench/gpu_check.py --device cuda        # the GPU machine: about 6-7 minutes
    python scripts/bench/gpu_check.py --device cpu --quick # CI: every part, tiny budgets

Parts (``--parts``, default all three, in this order):

* ``learner``: (1) a short training run of a Gymnasium task on the device
  (``+experiment=cartpole_lstm``, env=gym, no simulator): SPS, returns, a checkpoint;
  (2) the recipe's network and PPO update (``--experiment``, default league_ppo: its model,
  bptt, minibatches, epochs, kickstarting) on one seeded synthetic batch: logits, values and
  loss of the same weights on CPU and on the device in float32 (TF32 off), their largest
  difference against ``--tolerance`` (relative to the values' scale); on CUDA also the bf16
  autocast loss (what ``algo.bf16=true`` trains with) against ``--bf16-tolerance``; the
  gradients of one update step on both (within 10x ``--tolerance``); seconds per update,
  CPU vs device (median of ``--repeats``, one warm-up not counted).
* ``checkpoints``: the device run's checkpoint loaded on CPU (the same outputs as on the
  device) and resumed there for one iteration; a CPU run's resumed on the device.
* ``sim`` (when Node and the simulator are installed; else one line saying why not): the
  recipe on the direct backend at each ``--envs`` count for ``--sim-seconds``: train SPS,
  env-only SPS (random legal actions), CPU ms per env step by process role, GPU memory,
  RSS per env worker and simulator host, ``cuda_in_workers``: the env workers holding a
  context on the GPU as ``nvidia-smi`` lists them (must be empty), and the CUDA driver
  libraries the workers mapped (a report: torch's CUDA build can load one without a GPU).
  Hydra overrides after ``--`` apply here.

Exit status 0 when every part passed (``"ok": true``), 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import functools
import os
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from mapleenv.actions import action_space_size
from mapleenv.encoders import make_encoder, observation_box
from mapleenv.measure import machine_info
from mapleenv.policies import build_policy, load_checkpoint
from trainer.algos.buffer import ChunkBatch
from trainer.algos.ppo import evaluate_chunks, ppo_losses, ppo_update
from trainer.algos.terms import kickstart_term
from trainer.config import to_run_config, to_train_config
from trainer.run.train import Trainer

sys.path.append(str(Path(__file__).resolve().parents[1]))  # scripts/: the shared _cli (last)
from _cli import print_json, script_parser  # noqa: E402
from _gpu_sim import part_sim  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PARTS = ("learner", "checkpoints", "sim")
KICKSTART = [kickstart_term(1.0)]  # the update's full work, the teacher term too


def config(overrides: list[str]) -> Any:
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose("config", overrides=["tensorboard=false", *overrides])


def make_trainer(overrides: list[str], run_dir: Path, resume: Path | None = None) -> Trainer:
    cfg = config(overrides)
    raw = OmegaConf.to_container(cfg, resolve=True)
    typed, spec = to_run_config(cfg)  # the spec checked once, as the CLI does
    return Trainer(typed, run_dir, raw, resume_from=resume, spec=spec)


@contextlib.contextmanager
def exact_float32() -> Iterator[None]:
    """TF32 off inside (matmuls and cuDNN, the LSTM's too): CPU/device comparisons of float32
    mean float32; what training uses is restored after."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def synchronize(device: torch.device) -> None:
    _ = device.type == "cuda" and torch.cuda.synchronize(device)


# -- part learner


def gym_run(device: str, args: argparse.Namespace, run_dir: Path, resume: Path | None = None):
    """``args.gym_iterations`` CartPole iterations on ``device`` (one after ``resume``); the
    rows' summary and the checkpoint written at the end."""
    overrides = ["+experiment=cartpole_lstm", f"device={device}", "env.num_envs=8"]
    overrides.append(f"algo.rollout_steps={args.gym_rollout}")
    if args.quick:  # the device and the checkpoint's round trip, not the learning, are checked
        overrides.append("algo.epochs=1")
    trainer = make_trainer(overrides, run_dir, resume)
    try:
        rows = [trainer.train_iteration() for _ in range(1 if resume else args.gym_iterations)]
        path = trainer.save()
        first = next(iter(trainer.policy.parameters()))
        return {
            "device": str(first.device),
            "iterations": len(rows),
            "global_step": trainer.global_step,
            "sps_median": round(statistics.median(r["sps"] for r in rows), 1),
            "episode_return_last": rows[-1]["episode_return"],
            "update_s_median": round(statistics.median(r["update_s"] for r in rows), 4),
            "finite_losses": all(np.isfinite(r["loss"]) for r in rows if "loss" in r),
        }, path
    finally:
        trainer.close()


def synthetic_batch(obs_dim: int, n_actions: int, policy: Any, steps: int, bptt: int):
    """A seeded batch shaped like the recipe's rollout: random observations, legal-action
    masks (at least one legal), episode starts, teacher actions; the policy's own log-probs
    and values as the rollout's."""
    gen = torch.Generator().manual_seed(0)
    length, chunks = bptt, max(1, steps // bptt)
    obs = torch.rand(length, chunks, obs_dim, generator=gen)
    mask = torch.rand(length, chunks, n_actions, generator=gen) < 0.5
    mask[..., 0] = True
    start = (torch.rand(length, chunks, generator=gen) < 0.05).float()
    start[0] = 1.0
    hidden = policy.initial_state(chunks)
    with torch.no_grad():
        logits, values, _ = policy(obs, mask, hidden, start)
    actions = torch.distributions.Categorical(logits=logits).sample()
    logp = logits.log_softmax(-1).gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    teacher = torch.distributions.Categorical(logits=logits).sample()
    return ChunkBatch(
        obs, mask, start, actions, logp, values, torch.randn(length, chunks, generator=gen),
        values + torch.randn(length, chunks, generator=gen), torch.ones(length, chunks), hidden,
        teacher, torch.full((length, chunks), -1, dtype=torch.long),
        torch.zeros(length, chunks, n_actions),
    )  # fmt: skip


def to_device(batch: ChunkBatch, device: torch.device) -> ChunkBatch:
    moved = {k: getattr(batch, k) for k in batch.__dataclass_fields__ if k != "hidden"}
    hidden = tuple(h.to(device) for h in batch.hidden)
    return ChunkBatch(**{k: v.to(device) for k, v in moved.items()}, hidden=hidden)


def outputs(policy: Any, batch: ChunkBatch, algo: Any, bf16: bool = False) -> dict:
    """Masked logits, values and the PPO loss of the whole batch (no gradient)."""
    idx = torch.arange(batch.num_chunks, device=batch.obs.device)
    autocast = torch.autocast(batch.obs.device.type, dtype=torch.bfloat16, enabled=bf16)
    with torch.no_grad(), autocast:
        logits, values, _ = policy(batch.obs, batch.action_mask, batch.hidden, batch.episode_start)
        out = evaluate_chunks(policy, batch, idx)
        loss = ppo_losses(
            logp=out.logp, old_logp=batch.logp, advantages=batch.advantages, values=out.values,
            old_values=batch.values, returns=batch.returns, entropy=out.entropy,
            valid=batch.valid, cfg=algo,
        ).loss  # fmt: skip
    legal = batch.action_mask
    return {
        "logits": torch.where(legal, logits.float(), 0.0).cpu(),
        "values": values.float().cpu(),
        "loss": loss.float().cpu(),
    }


def max_rel_diff(a: dict, b: dict) -> dict[str, float]:
    """Per output: the largest absolute difference over the output's scale (at least 1)."""
    return {k: float((a[k] - b[k]).abs().max() / max(1.0, float(a[k].abs().max()))) for k in a}


def timed_updates(policy: Any, batch: ChunkBatch, algo: Any, repeats: int, bf16: bool) -> float:
    device = batch.obs.device
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-6)
    times = []
    for _ in range(repeats + 1):
        synchronize(device)
        begin = time.perf_counter()
        ppo_update(policy, optimizer, batch, algo, terms=KICKSTART, autocast_bf16=bf16)
        synchronize(device)
        times.append(time.perf_counter() - begin)
    return statistics.median(times[1:])


def update_check(args: argparse.Namespace, device: torch.device) -> dict:
    """The recipe's network and update on CPU and on ``device`` (module docs)."""
    cfg = to_train_config(config([f"+experiment={args.experiment}", "device=cpu"]))
    algo = cfg.algo
    if args.quick:
        algo = dataclasses.replace(algo, epochs=1, num_minibatches=2)
    obs_dim = observation_box(make_encoder(cfg.env.encoder)).shape[0]
    n_actions = action_space_size(9)
    torch.manual_seed(cfg.seed)
    cpu_policy = build_policy(obs_dim, n_actions, cfg.model)
    dev_policy = copy.deepcopy(cpu_policy).to(device)
    batch = synthetic_batch(obs_dim, n_actions, cpu_policy, args.update_steps, algo.bptt)
    dev_batch = to_device(batch, device)
    with exact_float32():
        ref = outputs(cpu_policy, batch, algo)
        diff = max_rel_diff(ref, outputs(dev_policy, dev_batch, algo))
    result: dict[str, Any] = {
        "model": cfg.model.kind,
        "steps": batch.num_chunks * algo.bptt,
        "bptt": algo.bptt,
        "epochs": algo.epochs,
        "num_minibatches": algo.num_minibatches,
        "bf16_configured": algo.bf16,
        "fp32_max_rel_diff": diff,
        "tolerance": args.tolerance,
        "fp32_equal": all(d <= args.tolerance for d in diff.values()),
    }
    if device.type == "cuda":
        bf16 = max_rel_diff(ref, outputs(dev_policy, dev_batch, algo, bf16=True))
        result |= {"bf16_max_rel_diff": bf16, "bf16_tolerance": args.bf16_tolerance}
        result["bf16_equal"] = bf16["loss"] <= args.bf16_tolerance
    one = dataclasses.replace(algo, epochs=1, num_minibatches=1, target_kl=None)
    grads = []
    for policy, b in ((cpu_policy, batch), (dev_policy, dev_batch)):
        optimizer = torch.optim.Adam(policy.parameters(), lr=algo.lr)
        generator = torch.Generator().manual_seed(0)
        with exact_float32():
            ppo_update(policy, optimizer, b, one, terms=KICKSTART, generator=generator)
        grads.append(
            torch.cat([p.grad.flatten().cpu() for p in policy.parameters() if p.grad is not None])
        )
    scale = max(1e-8, float(grads[0].abs().max()))
    result["grad_max_rel_diff"] = float((grads[0] - grads[1]).abs().max()) / scale
    result["grads_equal"] = result["grad_max_rel_diff"] <= args.tolerance * 10
    torch.set_num_threads(max(1, min(16, os.cpu_count() or 1)))
    cpu_s = timed_updates(cpu_policy, batch, algo, args.repeats, False)
    dev_s = timed_updates(dev_policy, dev_batch, algo, args.repeats, algo.bf16)
    result |= {"update_s_cpu": round(cpu_s, 4), "update_s_device": round(dev_s, 4)}
    result["update_speedup"] = round(cpu_s / dev_s, 2)
    return result


def part_learner(args: argparse.Namespace, device: torch.device, tmp: Path) -> dict:
    run, path = gym_run(str(device), args, tmp / "gym_device")
    args.device_checkpoint = path
    update = update_check(args, device)
    ok = run["finite_losses"] and update["fp32_equal"] and update["grads_equal"]
    return {"gym": run, "update": update, "ok": ok and update.get("bf16_equal", True)}


# -- part checkpoints


def part_checkpoints(args: argparse.Namespace, device: torch.device, tmp: Path) -> dict:
    """Device checkpoint -> CPU (outputs equal, one resumed iteration); CPU -> device."""
    if getattr(args, "device_checkpoint", None) is None:
        _, args.device_checkpoint = gym_run(str(device), args, tmp / "gym_device")
    ckpt = load_checkpoint(args.device_checkpoint)
    spec = ckpt["policy"]
    on_cpu = build_policy(spec["obs_dim"], spec["n_actions"], spec["model"])
    on_cpu.load_state_dict(ckpt["model"])
    on_dev = copy.deepcopy(on_cpu).to(device)
    obs = torch.rand(1, 4, spec["obs_dim"], generator=torch.Generator().manual_seed(1))
    mask = torch.ones(1, 4, spec["n_actions"], dtype=torch.bool)
    start = torch.ones(1, 4)
    with torch.no_grad(), exact_float32():
        a = on_cpu(obs, mask, on_cpu.initial_state(4), start)[:2]
        b = on_dev(
            obs.to(device), mask.to(device), on_dev.initial_state(4, device), start.to(device)
        )
    on_cpu_out = {"logits": a[0], "values": a[1]}
    diff = max(max_rel_diff(on_cpu_out, {"logits": b[0].cpu(), "values": b[1].cpu()}).values())
    device_run_dir = Path(args.device_checkpoint).parent.parent
    to_cpu, _ = gym_run("cpu", args, device_run_dir, resume=Path(args.device_checkpoint))
    _, cpu_path = gym_run("cpu", args, tmp / "gym_cpu")
    to_dev, _ = gym_run(str(device), args, tmp / "gym_cpu", resume=cpu_path)
    ok = diff <= args.tolerance and to_cpu["finite_losses"] and to_dev["finite_losses"]
    return {
        "device_to_cpu_output_max_rel_diff": diff,
        "device_to_cpu_resumed": to_cpu,
        "cpu_to_device_resumed": to_dev,
        "ok": ok and to_cpu["device"] == "cpu" and to_dev["device"] == str(device),
    }


# -- main


def machine(device: torch.device) -> dict:
    info = machine_info() | {"torch": torch.__version__, "device": str(device)}
    info["memory_gib"] = round(psutil.virtual_memory().total / 2**30, 1)
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
        info["cuda"] = torch.version.cuda
    return info


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = script_parser(__doc__)
    add = parser.add_argument
    add("--device", default="cuda", help="cuda | cuda:N | cpu (default %(default)s)")
    add("--parts", default=",".join(PARTS), help="comma-separated, from: " + ", ".join(PARTS))
    add("--experiment", default="league_ppo", help="the recipe (default %(default)s)")
    add("--quick", action="store_true", help="tiny budgets (CI): short rollouts, 1 epoch")
    add("--gym-iterations", type=int, default=None, help="CartPole iterations (default 20)")
    add("--update-steps", type=int, default=None, help="steps in the update batch (2048)")
    add("--repeats", type=int, default=None, help="timed updates per device (default 3)")
    add("--tolerance", type=float, default=1e-4, help="float32 CPU/device (default 1e-4)")
    add("--bf16-tolerance", type=float, default=5e-2, help="bf16 loss (default 5e-2)")
    add("--envs", default=None, help="env.num_envs counts of the sim part (default 16,32)")
    add("--sim-seconds", type=float, default=None, help="per env count (default 90)")
    add("overrides", nargs="*", help="Hydra overrides of the sim part (after --)")
    args = parser.parse_args(argv)
    quick = args.quick
    defaults = {
        "gym_iterations": 2 if quick else 20,
        "update_steps": 64 if quick else 2048,
        "repeats": 1 if quick else 3,
        "envs": "2" if quick else "16,32",
        "sim_seconds": 0.0 if quick else 90.0,
    }
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.gym_rollout = 16 if quick else 128
    args.envs = [int(n) for n in str(args.envs).split(",")]
    args.parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = sorted(set(args.parts) - set(PARTS))
    if unknown:
        parser.error(f"--parts: unknown {unknown}; choose from {', '.join(PARTS)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print(f"gpu_check.py: --device {args.device}: CUDA is not available", file=sys.stderr)
        return 2
    print_json({"part": "machine", **machine(device)})
    tmp = Path(tempfile.mkdtemp(prefix="maple_gpu_check_"))
    functions = {
        "learner": part_learner,
        "checkpoints": part_checkpoints,
        "sim": functools.partial(part_sim, make_trainer=make_trainer),
    }
    ok = True
    try:
        for part in args.parts:
            begin = time.monotonic()
            try:
                result = functions[part](args, device, tmp)
            except Exception as exc:
                traceback.print_exc()
                result = {"error": f"{type(exc).__name__}: {exc}", "ok": False}
            result["seconds"] = round(time.monotonic() - begin, 1)
            ok = ok and result["ok"]
            print_json({"part": part, **result})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
