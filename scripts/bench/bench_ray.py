"""Benchmark: per-step cost of Ray shards vs the in-process vector env, same env count.

Builds both vector envs once (local: `mapleenv.make_vector_env` with one simulator host, or
server on the server backend, per shard / Gymnasium `AsyncVectorEnv`; Ray: `RayVectorEnv`
with `--shards` actors, each with its own host or server, on a local Ray instance), then
times them in
alternating blocks so both see the same machine load, and prints JSON with the median
steps/s of each, their ratio and the implied Ray round-trip per vector step.

    python scripts/bench/bench_ray.py --env showdown --num-envs 4 --shards 2
    python scripts/bench/bench_ray.py --env cartpole --num-envs 4 --shards 2   # pure overhead
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[1]))  # scripts/: the shared _cli (last)
from _cli import print_json, script_parser  # noqa: E402


def random_actions(obs: Any, num_envs: int, n_actions: int, rng: np.random.Generator) -> np.ndarray:
    """Uniform over the legal actions when the obs carries an action mask."""
    if isinstance(obs, dict) and "action_mask" in obs:
        mask = np.asarray(obs["action_mask"], dtype=bool)
        return np.array([rng.choice(np.flatnonzero(row)) if row.any() else 0 for row in mask])
    return rng.integers(0, n_actions, size=num_envs)


def time_block(env: Any, obs: Any, steps: int, rng: np.random.Generator) -> tuple[float, Any]:
    """Env steps per second over `steps` vector steps, and the last observation."""
    n_actions = int(env.single_action_space.n)
    start = time.perf_counter()
    for _ in range(steps):
        obs, *_ = env.step(random_actions(obs, env.num_envs, n_actions, rng))
    return steps * env.num_envs / (time.perf_counter() - start), obs


def ping_ms(ray: Any, actors: list[Any], rounds: int) -> float:
    """Milliseconds per round of no-op calls to all shard actors (the bare Ray cost)."""
    start = time.perf_counter()
    for _ in range(rounds):
        ray.get([actor.ping.remote() for actor in actors])
    return 1000 * (time.perf_counter() - start) / rounds


def env_factory(
    args: argparse.Namespace, log_dir: str, processes: int = 1
) -> tuple[Any, dict[str, Any]]:
    """(env_fn, kwargs) building one vector env, locally or inside a shard, with
    ``processes`` simulator hosts (direct backend) or servers (server backend), so both
    sides of the comparison run as many as the Ray path has in all."""
    if args.env == "cartpole":
        fn = functools.partial(gym.make_vec, "CartPole-v1")
        return fn, {"vectorization_mode": "async", "vector_kwargs": {"context": "spawn"}}
    from mapleenv.vector.ray import make_showdown_vector_env

    kwargs = {
        "battle_format": args.battle_format,
        "opponent": args.opponent,
        "log_dir": log_dir,
        "servers": processes,
        "sim_hosts": processes,
    }
    return make_showdown_vector_env, kwargs


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = script_parser(__doc__)
    parser.add_argument(
        "--env",
        choices=["showdown", "cartpole"],
        default="showdown",
        help="Showdown battles, or CartPole for the pure Ray overhead (default %(default)s)",
    )
    parser.add_argument(
        "--num-envs", type=int, default=4, help="envs in each vector env (default %(default)s)"
    )
    parser.add_argument(
        "--shards",
        type=int,
        default=2,
        help="Ray actors the envs are split over (default %(default)s)",
    )
    parser.add_argument(
        "--cpus-per-shard",
        type=float,
        default=1,
        help="Ray CPUs reserved per shard (default %(default)s)",
    )
    parser.add_argument("--steps", type=int, default=200, help="vector steps per timed block")
    parser.add_argument("--repeats", type=int, default=3, help="timed blocks per variant")
    parser.add_argument("--warmup", type=int, default=20, help="untimed vector steps first")
    parser.add_argument(
        "--battle-format", default="gen9randombattle", help="battle format (default %(default)s)"
    )
    parser.add_argument(
        "--opponent", default="random", help="the envs' opponent name (default %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=0, help="env seed (default %(default)s)")
    return parser.parse_args(argv)


def measure(args: argparse.Namespace, ray: Any) -> tuple[dict[str, list[float]], list[float]]:
    """Steps/s of each timed block of the local and the Ray vector env (alternated, so both
    see the same load) and the no-op round trips to the Ray shards after each round."""
    from mapleenv.vector.ray import RayVectorEnv

    rng = np.random.default_rng(args.seed)
    envs: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench_ray_") as tmp:
        try:
            # as many hosts/servers locally as the Ray path has (one per shard)
            env_fn, kwargs = env_factory(args, os.path.join(tmp, "local"), args.shards)
            envs["local"] = env_fn(num_envs=args.num_envs, **kwargs)
            env_fn, kwargs = env_factory(args, os.path.join(tmp, "ray"))
            envs["ray"] = RayVectorEnv(
                args.num_envs,
                args.shards,
                env_fn=env_fn,
                env_kwargs=kwargs,
                cpus_per_shard=args.cpus_per_shard,
            )
            last_obs = {}
            for name, env in envs.items():
                obs, _ = env.reset(seed=args.seed)
                _, last_obs[name] = time_block(env, obs, args.warmup, rng)
            rates: dict[str, list[float]] = {name: [] for name in envs}
            pings: list[float] = []
            for _ in range(args.repeats):
                for name, env in envs.items():
                    rate, last_obs[name] = time_block(env, last_obs[name], args.steps, rng)
                    rates[name].append(rate)
                pings.append(ping_ms(ray, envs["ray"].actors, args.steps))
        finally:
            for env in envs.values():
                env.close()
    return rates, pings


def summary(
    args: argparse.Namespace, rates: dict[str, list[float]], pings: list[float], ray_version: str
) -> dict[str, Any]:
    """The JSON result: medians, the Ray path's overhead, the machine."""
    local_sps = statistics.median(rates["local"])
    ray_sps = statistics.median(rates["ray"])
    return {
        "benchmark": "ray_vs_local_vector_env",
        "env": args.env,
        "num_envs": args.num_envs,
        "shards": args.shards,
        "simulator_processes": args.shards if args.env == "showdown" else 0,
        "steps_per_block": args.steps,
        "repeats": args.repeats,
        "local_steps_per_s": [round(r, 1) for r in rates["local"]],
        "ray_steps_per_s": [round(r, 1) for r in rates["ray"]],
        "local_median_steps_per_s": round(local_sps, 1),
        "ray_median_steps_per_s": round(ray_sps, 1),
        "ray_over_local": round(ray_sps / local_sps, 3),
        # extra wall time per vector step that the Ray path costs (negative: Ray was faster)
        "ray_extra_ms_per_vector_step": round(
            1000 * (args.num_envs / ray_sps - args.num_envs / local_sps), 3
        ),
        "ray_noop_round_trip_ms": [round(p, 3) for p in pings],
        "ray_noop_round_trip_median_ms": round(statistics.median(pings), 3),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "ray": ray_version,
        },
        "command": " ".join([sys.executable.rsplit("/", 1)[-1], *sys.argv]),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    import ray

    ray.init(
        address="local",
        num_cpus=max(2, int(args.shards * args.cpus_per_shard)),
        include_dashboard=False,
        log_to_driver=False,
    )
    try:
        rates, pings = measure(args, ray)
    finally:
        ray.shutdown()
    result = summary(args, rates, pings, ray.__version__)
    print_json(result, indent=2)
    return result


if __name__ == "__main__":
    main()
