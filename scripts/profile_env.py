#!/usr/bin/env python
"""Where one env's step time goes, per backend: CPU per step and a cProfile breakdown.

Runs one ``PokemonEnv`` in this process with random legal actions against ``random`` for
``--steps`` steps, then prints JSON: wall and CPU milliseconds per step for this process
(Python: poke-env parsing, encoder, mask, reward, opponent, IPC) and for its Node children
(the simulator host, or the Showdown server), read from /proc. CPU time is what a
loaded machine does not distort much, and on a saturated machine steps/s ~ cores / CPU per
step. With ``--cprofile`` it also lists the functions with the most own time and the total
time of Maple's hot spots (encoder, mask, reward, backend); cProfile slows Python down,
so read those as shares, not as absolute times.

    python scripts/profile_env.py --backend direct --steps 3000 --cprofile
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import resource
import sys
import time
from typing import Any

import numpy as np

from mapleenv.measure import descendants_cpu

# (label, filename fragment, function name) of the costs reported by --cprofile.
HOT_SPOTS = [
    ("encoder.encode", "mapleenv/encoders/__init__.py", "encode"),
    ("actions.legal_actions", "mapleenv/actions.py", "legal_actions"),
    ("reward.compute", "mapleenv/reward.py", "compute"),
    ("env._observe", "mapleenv/env.py", "_observe"),
    ("env.step", "mapleenv/env.py", "step"),
    ("direct: wait for simulator", "mapleenv/backends/direct/host.py", "send"),
    ("direct: absorb sim output", "mapleenv/backends/direct/session.py", "_absorb"),
    ("direct: opponent choice", "mapleenv/backends/direct/session.py", "_opponent_choice"),
    ("poke-env parse_request", "poke_env/battle/battle.py", "parse_request"),
    ("poke-env parse_message", "poke_env/battle/abstract_battle.py", "parse_message"),
    ("poke-env valid_orders", "poke_env/battle/battle.py", "valid_orders"),
]


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def run(
    backend: str,
    steps: int,
    seed: int,
    opponent: str,
    encoder: str,
    profiler: cProfile.Profile | None,
) -> dict[str, Any]:
    import mapleenv

    if backend == "direct":
        import mapleenv.backends.direct  # noqa: F401  (registers the backend)
    env = mapleenv.PokemonEnv(opponent=opponent, encoder=encoder, backend=backend, seed=seed)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset()
    for _ in range(20):  # warm-up: imports, data tables, first battle
        obs, _, term, trunc, _ = env.step(rng.choice(np.flatnonzero(obs["action_mask"])))
        if term or trunc:
            obs, _ = env.reset()
    self0, child0, t0 = _cpu(resource.RUSAGE_SELF), descendants_cpu(), time.time()
    episodes = 0
    if profiler is not None:
        profiler.enable()
    for _ in range(steps):
        obs, _, term, trunc, _ = env.step(rng.choice(np.flatnonzero(obs["action_mask"])))
        if term or trunc:
            episodes += 1
            obs, _ = env.reset()
    if profiler is not None:
        profiler.disable()
    wall = time.time() - t0
    self_cpu = _cpu(resource.RUSAGE_SELF) - self0
    child_cpu = descendants_cpu() - child0
    env.close()
    return {
        "backend": backend,
        "steps": steps,
        "episodes": episodes,
        "profiled": bool(profiler),
        "wall_ms_per_step": 1e3 * wall / steps,
        "python_cpu_ms_per_step": 1e3 * self_cpu / steps,
        "node_cpu_ms_per_step": 1e3 * child_cpu / steps,
        "steps_per_s": steps / wall,
    }


def breakdown(profiler: cProfile.Profile, steps: int, top: int) -> dict[str, Any]:
    stats = pstats.Stats(profiler, stream=io.StringIO())
    total = sum(row[2] for row in stats.stats.values())  # own time of every function
    hot = {}
    for label, fragment, name in HOT_SPOTS:
        cum = sum(
            row[3]
            for (path, _, func), row in stats.stats.items()
            if func == name and fragment in path.replace("\\", "/")
        )
        hot[label] = {
            "ms_per_step": round(1e3 * cum / steps, 3),
            "share": round(cum / total, 3) if total else None,
        }
    own = sorted(stats.stats.items(), key=lambda item: item[1][2], reverse=True)[:top]
    return {
        "profiled_ms_per_step": round(1e3 * total / steps, 3),
        "hot_spots_cumulative": hot,
        "top_own_time": [
            {
                "function": f"{path.split('site-packages/')[-1]}:{line}({func})",
                "ms_per_step": round(1e3 * row[2] / steps, 3),
                "share": round(row[2] / total, 3),
            }
            for (path, line, func), row in own
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--backend", default="direct", help="server, direct or server,direct (default %(default)s)"
    )
    parser.add_argument(
        "--steps", type=int, default=2000, help="env steps per backend (default %(default)s)"
    )
    parser.add_argument(
        "--opponent", default="random", help="the env's opponent name (default %(default)s)"
    )
    parser.add_argument(
        "--encoder", default="simple", help="simple | rich | module:factory (default %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=0, help="env seed (default %(default)s)")
    parser.add_argument("--cprofile", action="store_true", help="add a cProfile breakdown")
    parser.add_argument(
        "--top", type=int, default=20, help="--cprofile: functions listed (default %(default)s)"
    )
    args = parser.parse_args(argv)
    for backend in [b.strip() for b in args.backend.split(",") if b.strip()]:
        record = run(backend, args.steps, args.seed, args.opponent, args.encoder, None)
        if args.cprofile:
            profiler = cProfile.Profile()
            profiled = run(backend, args.steps, args.seed, args.opponent, args.encoder, profiler)
            record["cprofile"] = breakdown(profiler, profiled["steps"], args.top)
        print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
