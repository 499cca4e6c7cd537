"""make_vector_env on a doubles format: spawned workers (one battle each, or two per
worker) play double battles to the end with random legal joint actions, on both backends,
and the simulator refuses none of them."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from mapleenv.actions import action_space_size
from mapleenv.vector import make_vector_env

pytestmark = [pytest.mark.integration]

FORMAT = "gen9randomdoublesbattle"
JOINT = action_space_size(9, doubles=True)


def random_legal(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return (rng.random(masks.shape) + masks.astype(bool)).argmax(axis=1)


@pytest.mark.parametrize(("backend", "per_worker"), [("direct", 2), ("server", 1)])
def test_doubles_vector_envs_play_battles_to_the_end(backend: str, per_worker: int) -> None:
    envs = make_vector_env(
        4, battle_format=FORMAT, encoder="doubles", opponent="random", backend=backend,
        battles_per_worker=per_worker, seed=3, autoreset_mode=AutoresetMode.SAME_STEP,
    )  # fmt: skip
    rng = np.random.default_rng(3)
    ended: list[dict] = []
    try:
        assert envs.single_action_space.n == JOINT and len(envs.processes) == 4 // per_worker
        obs, _ = envs.reset(seed=3)
        for _ in range(3000):
            assert obs["action_mask"].shape == (4, JOINT) and obs["action_mask"].any(axis=1).all()
            obs, _, terminated, truncated, info = envs.step(random_legal(obs["action_mask"], rng))
            assert "illegal_action" not in info
            for i in np.flatnonzero(terminated | truncated):
                ended.append({k: v[i] for k, v in info["final_info"].items()})
            if len(ended) >= 4:
                break
    finally:
        envs.close()
    assert len(ended) >= 4, "battles did not end"
    assert all(e["turns"] > 0 and not e.get("_aborted", False) for e in ended)
    assert all("-gen9randomdoublesbattle-" in e["battle_tag"] for e in ended)
