"""Unit tests of the Ray sharding helpers: no Ray instance, no server needed."""

import dataclasses
import subprocess
import sys

import numpy as np
import pytest

from mapleenv.spec import EnvSpec
from mapleenv.vector.ray import (
    ShardFailedError,
    _shard_kwargs,
    concatenate_batches,
    merge_infos,
    shard_spec,
    slice_batch,
    split_envs,
)


def test_split_envs_covers_all_envs_contiguously():
    assert split_envs(7, 3) == [range(0, 3), range(3, 5), range(5, 7)]
    assert split_envs(4, 4) == [range(i, i + 1) for i in range(4)]
    with pytest.raises(ValueError, match="num_envs"):
        split_envs(2, 3)
    with pytest.raises(ValueError, match="shards"):
        split_envs(2, 0)


def test_concatenate_and_slice_dict_observations():
    a = {"observation": np.zeros((2, 3), np.float32), "action_mask": np.ones((2, 5), np.int8)}
    b = {"observation": np.ones((1, 3), np.float32), "action_mask": np.zeros((1, 5), np.int8)}
    merged = concatenate_batches([a, b])
    assert merged["observation"].shape == (3, 3) and merged["observation"].dtype == np.float32
    assert merged["action_mask"].tolist() == [[1] * 5, [1] * 5, [0] * 5]
    tup = concatenate_batches([(np.arange(2),), (np.arange(3),)])
    assert tup[0].tolist() == [0, 1, 0, 1, 2]
    assert slice_batch(np.arange(5), range(1, 3)).tolist() == [1, 2]
    assert slice_batch({"a": np.arange(4)}, range(2, 4))["a"].tolist() == [2, 3]


def test_merge_infos_keeps_gymnasium_masks_and_defaults():
    ranges = [range(0, 2), range(2, 3)]
    first = {
        "won": np.array([True, False]),
        "_won": np.array([True, False]),
        "battle_tag": np.array(["b1", None], dtype=object),
        "_battle_tag": np.array([True, False]),
        "episode": {"r": np.array([1.5, 0.0]), "_r": np.array([True, False])},
        "_episode": np.array([True, False]),
    }
    second = {"turns": np.array([12]), "_turns": np.array([True])}
    merged = merge_infos([first, second], ranges)
    assert merged["won"].tolist() == [True, False, False]
    assert merged["_won"].tolist() == [True, False, False]
    assert merged["battle_tag"].tolist() == ["b1", None, None]
    assert merged["turns"].tolist() == [0, 0, 12]
    assert merged["_turns"].tolist() == [False, False, True]
    assert merged["episode"]["r"].tolist() == [1.5, 0.0, 0.0]
    assert merged["_episode"].tolist() == [True, False, False]
    assert merge_infos([{}, {}], ranges) == {}
    with pytest.raises(TypeError, match="dict in some shards"):
        merge_infos([{"x": {"a": np.zeros(2)}}, {"x": np.zeros(1)}], ranges)


def test_shard_kwargs_offset_seed_and_separate_log_dirs(tmp_path):
    kwargs = _shard_kwargs(
        {"seed": 10, "log_dir": str(tmp_path), "opponent": "random"}, 1, range(4, 8)
    )
    assert kwargs == {"seed": 14, "log_dir": str(tmp_path / "shard1"), "opponent": "random"}
    assert _shard_kwargs({"seed": None}, 1, range(4, 8)) == {"seed": None}


def test_shard_failed_error_names_shard_node_and_cause():
    err = ShardFailedError(1, range(4, 8), "10.0.0.7", "step: actor died")
    assert (err.shard, err.node_ip, err.envs) == (1, "10.0.0.7", range(4, 8))
    assert str(err) == "Ray shard 1 (envs 4..7) on node 10.0.0.7 failed: step: actor died"


@pytest.mark.integration  # a fresh Python process
def test_single_machine_path_does_not_import_ray():
    code = "import sys, mapleenv, mapleenv.vector.ray; sys.exit(1 if 'ray' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0


def test_shard_kwargs_give_each_shard_its_seed_and_log_dir_in_the_spec(tmp_path):
    spec = EnvSpec(seed=10, log_dir=tmp_path, max_turns=7)
    kwargs = _shard_kwargs({"spec": spec, "context": "spawn"}, 1, range(4, 8))
    assert kwargs["context"] == "spawn"
    assert kwargs["spec"] == dataclasses.replace(spec, seed=14, log_dir=str(tmp_path / "shard1"))
    assert _shard_kwargs({"spec": EnvSpec()}, 1, range(4, 8))["spec"] == EnvSpec()


def test_shard_spec_gives_a_shard_one_simulator_host_per_cpu():
    """mapleenv decides the hosts of a Ray shard: ``sim_hosts=None`` is one per shard CPU
    (at least one), a given count stays; the spec is checked once here (an external
    server's: no simulator to ask, no process)."""
    spec = EnvSpec(server="127.0.0.1:8000")
    assert shard_spec(spec, 2.0).sim_hosts == 2
    assert shard_spec(spec, 0.5).sim_hosts == 1
    assert shard_spec(dataclasses.replace(spec, sim_hosts=0), 4).sim_hosts == 0
    assert shard_spec(spec, 3).is_checked
