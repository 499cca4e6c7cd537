"""scripts/bench/bench_ray.py: both sides of the comparison run as many simulator processes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _bench_ray():
    spec = importlib.util.spec_from_file_location(
        "bench_ray", ROOT / "scripts" / "bench" / "bench_ray.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_local_env_gets_one_host_or_server_per_ray_shard(tmp_path: Path) -> None:
    bench = _bench_ray()
    args = bench.parse_args(["--shards", "3", "--num-envs", "6"])
    _, local = bench.env_factory(args, str(tmp_path / "local"), args.shards)
    _, shard = bench.env_factory(args, str(tmp_path / "ray"))
    # whichever backend the envs default to, the local side has the Ray side's total
    for key in ("sim_hosts", "servers"):
        assert local[key] == args.shards * shard[key] == 3
