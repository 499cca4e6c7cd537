#!/usr/bin/env python
"""CPU per decision of a policy opponent's network: eager vs traced batch-1 step; one JSON line.

A ``policy:``/``self`` opponent runs its policy one decision at a time, at batch 1, on one
thread inside an env worker (:mod:`mapleenv.opponents.policy`). This times that forward
(thread CPU) with the eager network and with :func:`mapleenv.policies.batch1_step` (the
traced, frozen step the opponents use), in ``--rounds`` alternating slices, and reports the
medians and their ratio. The recurrent state is carried between steps as in a battle.

    python scripts/bench/bench_policy_step.py models/attention_ppo_gen9random.pt --rounds 7
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch

from mapleenv.measure import machine_info
from mapleenv.policies import batch1_step, policy_from_snapshot, read_snapshot

sys.path.append(str(Path(__file__).resolve().parents[1]))  # scripts/: the shared _cli (last)
from _cli import print_json, script_parser  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("checkpoint", help="a Maple checkpoint (format 2)")
    parser.add_argument("--steps", type=int, default=300, help="steps per slice (default 300)")
    parser.add_argument("--rounds", type=int, default=5, help="alternated slice pairs (default 5)")
    args = parser.parse_args(argv)

    torch.set_num_threads(1)  # as in an env worker
    snapshot = read_snapshot(args.checkpoint)
    obs_dim, n_actions = int(snapshot["policy"]["obs_dim"]), int(snapshot["policy"]["n_actions"])
    network = policy_from_snapshot(snapshot).eval()
    traced = batch1_step(network, obs_dim, n_actions)
    obs = torch.rand(args.steps, 1, obs_dim, generator=torch.Generator().manual_seed(0))
    mask = torch.ones(1, n_actions, dtype=torch.bool)
    state = network.initial_state(1)

    def run(step) -> float:
        nonlocal state
        with torch.inference_mode():
            start = time.thread_time()
            for t in range(args.steps):
                _, _, state = step(obs[t], mask, state, torch.zeros(1))
            return (time.thread_time() - start) / args.steps * 1000

    run(network), run(traced)  # warm-up
    eager, fast = [], []
    for _ in range(args.rounds):
        eager.append(run(network))
        fast.append(run(traced))
    result = {
        "checkpoint": args.checkpoint,
        "traced": isinstance(traced, torch.jit.ScriptModule),
        "eager_cpu_ms_per_step": statistics.median(eager),
        "traced_cpu_ms_per_step": statistics.median(fast),
        "ratio": statistics.median(f / e for f, e in zip(fast, eager, strict=True)),
        "rounds": {"eager": eager, "traced": fast},
        "machine": machine_info(),
    }
    print_json(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
