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
With ``--ceiling`` it also measures the raw simulator (``sim_ceiling.js``, one process)
right after, and reports ``node_vs_sim``: the host's Node CPU per agent step over the
simulator's CPU per turn (issue #22's target: <= 1.25); give both ``--warmup 60``, a cold
V8 costs up to twice as much per step.

With ``--teacher NAME`` the env also computes a teacher's choice (``env.teacher``, the
kickstarting target) and the run alternates ``--rounds`` pairs of ``--steps``-step
segments with the teacher on and off (``PokemonEnv.set_teacher_active``) in the same env,
the order swapped every round so drift on a loaded machine hits both alike; the JSON has
the mean per mode (``teacher_on``, ``teacher_off``), the teacher's cost as the per-round
on-minus-off Python CPU (``teacher_python_cpu_ms_per_step``) and every segment.

    python scripts/bench/profile_env.py --backend direct --steps 3000 --cprofile
    python scripts/bench/profile_env.py --encoder singles_entities --teacher heuristic --steps 500
    --rounds 4 python scripts/bench/profile_env.py --steps 5000 --warmup 60 --ceiling
    python scripts/bench/profile_env.py --battle-format gen9randomdoublesbattle --cprofile

``--battle-format`` picks the format (a doubles one plays with ``encoder=doubles_basic`` unless
``--encoder`` says otherwise; the ceiling plays the same format).
"""

from __future__ import annotations

import cProfile
import io
import pstats
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from mapleenv.measure import Ceiling, descendants_cpu
from mapleenv.showdown.formats import is_doubles_format

sys.path.append(str(Path(__file__).resolve().parents[1]))  # scripts/: the shared _cli (last)
from _cli import print_json, script_parser  # noqa: E402

# (label, filename fragment, function name) of the costs reported by --cprofile.
HOT_SPOTS = [
    ("encoder.encode", "mapleenv/encoders/__init__.py", "encode"),
    ("actions.legal_actions", "mapleenv/actions/__init__.py", "legal_actions"),
    ("reward.compute", "mapleenv/reward.py", "compute"),
    ("env._observe", "mapleenv/env.py", "_observe"),
    ("env.step", "mapleenv/env.py", "step"),
    ("direct: wait for simulator", "mapleenv/backends/direct/host.py", "send"),
    ("direct: absorb sim output", "mapleenv/backends/direct/session.py", "_absorb"),
    ("direct: opponent choice", "mapleenv/backends/direct/session.py", "_opponent_choice"),
    ("poke-env parse_request", "poke_env/battle/battle.py", "parse_request"),
    ("poke-env parse_message", "poke_env/battle/abstract_battle.py", "parse_message"),
    ("poke-env valid_orders", "poke_env/battle/battle.py", "valid_orders"),
    ("doubles: legal_actions", "mapleenv/actions/doubles.py", "legal_actions"),
    ("doubles: poke-env valid_orders", "poke_env/battle/double_battle.py", "valid_orders"),
    ("doubles: poke-env join_orders", "poke_env/player/battle_order.py", "join_orders"),
    ("doubles: encoder", "mapleenv/encoders/doubles/basic.py", "encode"),
]


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


class Stepper:
    """One env stepped with random legal actions, resetting at each episode's end."""

    def __init__(self, backend: str, seed: int, **settings: Any) -> None:
        import mapleenv

        if backend == "direct":
            import mapleenv.backends.direct  # noqa: F401  (registers the backend)
        self.env = mapleenv.PokemonEnv(backend=backend, seed=seed, **settings)
        self.rng = np.random.default_rng(seed)
        self.obs, _ = self.env.reset()
        self.episodes = 0

    def steps(self, n: int) -> None:
        for _ in range(n):
            action = self.rng.choice(np.flatnonzero(self.obs["action_mask"]))
            self.obs, _, term, trunc, _ = self.env.step(action)
            if term or trunc:
                self.episodes += 1
                self.obs, _ = self.env.reset()

    def measure(self, n: int, profiler: cProfile.Profile | None = None) -> dict[str, Any]:
        """Step ``n`` times; wall and CPU milliseconds per step."""
        self0, child0, t0, episodes0 = (
            _cpu(resource.RUSAGE_SELF),
            descendants_cpu(),
            time.time(),
            self.episodes,
        )
        if profiler is not None:
            profiler.enable()
        self.steps(n)
        if profiler is not None:
            profiler.disable()
        wall = time.time() - t0
        return {
            "steps": n,
            "episodes": self.episodes - episodes0,
            "wall_ms_per_step": 1e3 * wall / n,
            "python_cpu_ms_per_step": 1e3 * (_cpu(resource.RUSAGE_SELF) - self0) / n,
            "node_cpu_ms_per_step": 1e3 * (descendants_cpu() - child0) / n,
            "steps_per_s": n / wall,
        }


def run(
    backend: str,
    steps: int,
    seed: int,
    opponent: str,
    encoder: str,
    profiler: cProfile.Profile | None,
    warmup: float = 0.0,
    battle_format: str = "gen9randombattle",
) -> dict[str, Any]:
    stepper = Stepper(
        backend, seed, opponent=opponent, encoder=encoder, battle_format=battle_format
    )
    try:
        stepper.steps(20)  # warm-up: imports, data tables, first battle
        deadline = time.monotonic() + warmup  # and the simulator's JIT, when asked
        while time.monotonic() < deadline:
            stepper.steps(50)
        record = stepper.measure(steps, profiler)
    finally:
        stepper.env.close()
    return {
        "backend": backend,
        "battle_format": battle_format,
        "encoder": encoder,
        "profiled": bool(profiler),
        **record,
    }


def against_ceiling(
    record: dict[str, Any], warmup: float, battle_format: str = "gen9randombattle"
) -> dict[str, Any]:
    """The raw simulator's CPU per turn (one process, warmed ``warmup`` s, measured as long
    as the env ran) and the Node host's CPU per agent step against it."""
    ceiling = Ceiling(1, battle_format, warmup=warmup)
    try:
        sim = ceiling.measure(max(5.0, record["steps"] * record["wall_ms_per_step"] / 1e3))
    finally:
        ceiling.close()
    return {
        "sim_cpu_ms_per_turn": sim["sim_cpu_ms_per_turn"],
        "node_vs_sim": record["node_cpu_ms_per_step"] / sim["sim_cpu_ms_per_turn"],
    }


def run_teacher(
    backend: str, steps: int, seed: int, rounds: int, **settings: Any
) -> dict[str, Any]:
    """``rounds`` pairs of segments with the teacher on and off, alternated (module docs)."""
    stepper = Stepper(backend, seed, **settings)
    segments: list[dict[str, Any]] = []
    try:
        stepper.steps(20)
        for r in range(rounds):
            for active in (True, False) if r % 2 == 0 else (False, True):
                stepper.env.set_teacher_active(active)
                calls = stepper.env.teacher_calls()
                segment = stepper.measure(steps)
                segment |= {"teacher": active, "teacher_calls": stepper.env.teacher_calls() - calls}
                segments.append(segment)
    finally:
        stepper.env.close()
    keys = ("wall_ms_per_step", "python_cpu_ms_per_step", "node_cpu_ms_per_step")
    modes = {
        f"teacher_{'on' if active else 'off'}": {
            key: round(float(np.mean([s[key] for s in segments if s["teacher"] == active])), 4)
            for key in keys
        }
        for active in (True, False)
    }
    on, off = (
        [s["python_cpu_ms_per_step"] for s in segments if s["teacher"] == active]
        for active in (True, False)
    )
    paired = [a - b for a, b in zip(on, off, strict=True)]  # per round: the drift cancels
    return {
        "backend": backend,
        "teacher": settings["teacher"],
        **modes,
        "teacher_python_cpu_ms_per_step": {
            "mean": round(float(np.mean(paired)), 4),
            "min": round(min(paired), 4),
            "max": round(max(paired), 4),
            "rounds_on_slower": sum(d > 0 for d in paired),
        },
        "segments": segments,
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
    parser = script_parser(__doc__)
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
        "--encoder",
        default=None,
        help="simple | rich | doubles | module:factory (default: simple, doubles for a "
        "doubles format)",
    )
    parser.add_argument(
        "--battle-format", default="gen9randombattle", help="battle format (default %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=0, help="env seed (default %(default)s)")
    parser.add_argument("--cprofile", action="store_true", help="add a cProfile breakdown")
    parser.add_argument(
        "--teacher", default=None, help="teacher name: compare it on vs off (e.g. heuristic)"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="--teacher: on/off segment pairs (default %(default)s)",
    )
    parser.add_argument(
        "--top", type=int, default=20, help="--cprofile: functions listed (default %(default)s)"
    )
    parser.add_argument(
        "--warmup",
        type=float,
        default=0.0,
        help="seconds of unmeasured steps first (a cold simulator host's Node CPU per step "
        "falls for about a minute; default %(default)s)",
    )
    parser.add_argument(
        "--ceiling",
        action="store_true",
        help="also measure the raw simulator's CPU per turn (warmed as long as --warmup) "
        "and report node_vs_sim = the host's Node CPU per step / the simulator's per turn",
    )
    args = parser.parse_args(argv)
    if args.encoder is None:
        args.encoder = "doubles_basic" if is_doubles_format(args.battle_format) else "singles_basic"
    for backend in [b.strip() for b in args.backend.split(",") if b.strip()]:
        if args.teacher is not None:
            settings = {
                "opponent": args.opponent,
                "encoder": args.encoder,
                "battle_format": args.battle_format,
            }
            record = run_teacher(
                backend, args.steps, args.seed, args.rounds, teacher=args.teacher, **settings
            )
            print_json(record)
            continue
        common = (backend, args.steps, args.seed, args.opponent, args.encoder)
        record = run(*common, None, args.warmup, battle_format=args.battle_format)
        if args.ceiling:
            record |= against_ceiling(record, args.warmup, args.battle_format)
        if args.cprofile:
            profiler = cProfile.Profile()
            profiled = run(*common, profiler, battle_format=args.battle_format)
            record["cprofile"] = breakdown(profiler, profiled["steps"], args.top)
        print_json(record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
