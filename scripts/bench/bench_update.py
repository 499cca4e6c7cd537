"""Time of one PPO update by torch threads and OpenMP wait policy, quiet and loaded.

    python scripts/bench/bench_update.py --modes 2,2:passive,2:spin=10000,1 --rounds 3 --load 0,2

Each mode ``THREADS[:active|passive][:spin=N]`` runs in its own Python process with that
``OMP_WAIT_POLICY`` / ``GOMP_SPINCOUNT`` (unset where the mode does not name them: libgomp's
defaults; they must be set before torch loads OpenMP): the real ``ppo_update`` of the
recipe's shape (2048 steps in ``--bptt`` chunks, 4 minibatches, 4 epochs) on the network a
checkpoint's spec builds, with made-up but valid inputs. Modes alternate within every
round. ``--load K`` runs K busy-looping processes beside it (another job on the box; 0:
quiet). One JSON line per load: the median seconds per update of each mode, and its ratio
to the first mode.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # scripts/: the shared _cli (last)
from _cli import print_json, script_parser  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# busy until its parent is gone (reparented), so a killed benchmark leaves nothing running
_BUSY = "import os\nparent = os.getppid()\nwhile os.getppid() == parent: pass"


def _child(args: argparse.Namespace) -> None:
    """Build the network and a batch, then print the seconds of each of ``--repeats``
    updates (after one not counted)."""
    import torch

    from mapleenv.policies import build_policy, read_snapshot
    from trainer.algos.buffer import ChunkBatch
    from trainer.algos.ppo import ppo_update
    from trainer.config import PPOConfig

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    spec = read_snapshot(args.checkpoint)["policy"]
    policy = build_policy(spec["obs_dim"], spec["n_actions"], spec["model"])
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-6)
    length, chunks = args.bptt, args.steps // args.bptt
    obs = torch.rand(length, chunks, spec["obs_dim"])
    mask = torch.ones(length, chunks, spec["n_actions"], dtype=torch.bool)
    start = torch.zeros(length, chunks)
    hidden = policy.initial_state(chunks)
    with torch.no_grad():
        logits, values, _ = policy(obs, mask, hidden, start)
    actions = torch.distributions.Categorical(logits=logits).sample()
    logp = logits.log_softmax(-1).gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    none = torch.full((length, chunks), -1, dtype=torch.long)
    batch = ChunkBatch(
        obs, mask, start, actions, logp, values, torch.randn(length, chunks),
        values + torch.randn(length, chunks), torch.ones(length, chunks), hidden, none, none,
        torch.zeros(length, chunks, spec["n_actions"]),
    )  # fmt: skip
    cfg = PPOConfig(num_minibatches=4, epochs=4, bptt=args.bptt)
    times = []
    for _ in range(args.repeats + 1):
        begin = time.perf_counter()
        ppo_update(policy, optimizer, batch, cfg)
        times.append(time.perf_counter() - begin)
    print_json(times[1:])


def mode_env(mode: str, base: dict[str, str]) -> tuple[str, dict[str, str]]:
    """``THREADS[:active|passive][:spin=N]`` as the thread count and the environment of its
    process (OpenMP's variables only where the mode names them; unset: libgomp's default)."""
    threads, *options = mode.split(":")
    env = {k: v for k, v in base.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    for option in options:
        if option.startswith("spin="):
            env["GOMP_SPINCOUNT"] = option.removeprefix("spin=")
        else:
            env["OMP_WAIT_POLICY"] = option.upper()
    return threads, env


def _run_mode(mode: str, args: argparse.Namespace) -> list[float]:
    threads, env = mode_env(mode, dict(os.environ))
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, __file__, "--child", "--threads", threads]
    cmd += ["--checkpoint", args.checkpoint, "--repeats", str(args.repeats)]
    cmd += ["--bptt", str(args.bptt), "--steps", str(args.steps)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, timeout=900)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _measure(load: int, args: argparse.Namespace) -> dict[str, object]:
    modes = args.modes.split(",")
    busy = [subprocess.Popen([sys.executable, "-c", _BUSY]) for _ in range(load)]
    try:
        times: dict[str, list[float]] = {mode: [] for mode in modes}
        for _ in range(args.rounds):
            for mode in modes:
                times[mode] += _run_mode(mode, args)
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
    medians = {mode: statistics.median(v) for mode, v in times.items()}
    first = medians[modes[0]]
    return {
        "load_procs": load,
        "cores": os.cpu_count(),
        "update_s": {m: round(s, 3) for m, s in medians.items()},
        "vs_first": {m: round(s / first, 2) for m, s in medians.items()},
        "updates_per_mode": len(times[modes[0]]),
    }


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument(
        "--modes", default="2,2:passive,1", help="THREADS[:active|passive][:spin=N],..."
    )
    parser.add_argument("--load", default="0,2", help="busy processes beside it, per line")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the modes")
    parser.add_argument("--repeats", type=int, default=2, help="updates per mode and round")
    parser.add_argument(
        "--checkpoint",
        default=str(ROOT / "models/attention_ppo_gen9random.pt"),
        help="its spec builds the network (default: the shipped model)",
    )
    parser.add_argument("--bptt", type=int, default=16, help="steps per chunk")
    parser.add_argument("--steps", type=int, default=2048, help="steps per update")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args)
        return
    for load in (int(x) for x in args.load.split(",")):
        print_json(_measure(load, args))


if __name__ == "__main__":
    main()
