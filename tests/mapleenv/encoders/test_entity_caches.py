"""The rich encoders' caches change nothing: observations are bit-identical to the
uncached code's.

* Recorded battles (``tests/data/*.jsonl.gz`` and ``tests/data/encoder_pins/``) replayed
  through ``singles_entities`` and ``singles_sets`` (one encoder each across all battles, as in an
  env worker) must give exactly the observations stored in ``encoder_pins/expected.npz``,
  recorded with the encoders as they were before their per-call caches (commit 33ee176).
  Regenerate (only when the observation is meant to change) with the code to pin::

      PYTHONPATH=. python tests/mapleenv/encoders/test_entity_caches.py --record

* Real battles on the direct backend (real Node simulator, fixed seeds): at every step the
  env's long-lived encoder must equal a fresh encoder with every module-level cache
  cleared whose damage calculator reads the battle's own objects, not the read-once
  views of :mod:`mapleenv.encoders.features.calcview`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # conftest, when run as a script
from conftest import RECORDED_BATTLES, DirectPokemonEnv, replay_decisions  # noqa: E402

from mapleenv.encoders.features import calcview, profile, threat
from mapleenv.encoders.features import random_sets as sets  # noqa: E402
from mapleenv.encoders.singles.entities import SinglesEntitiesEncoder  # noqa: E402
from mapleenv.encoders.singles.sets import SinglesSetsEncoder  # noqa: E402

PINS = Path(__file__).resolve().parents[2] / "data" / "encoder_pins"
PINNED_BATTLES = sorted(RECORDED_BATTLES) + sorted(PINS.glob("*.jsonl.gz"))


def encode_recorded() -> dict[str, np.ndarray]:
    """``singles_entities`` and ``singles_sets`` observations of every decision of the pinned
    battles, under the names the pins were written with (``rich``, ``rich2``)."""
    entities, sets = SinglesEntitiesEncoder(), SinglesSetsEncoder()
    out: dict[str, list[np.ndarray]] = {"rich": [], "rich2": []}
    for path in PINNED_BATTLES:
        pairs, _ = replay_decisions(path, lambda b: (entities.encode(b), sets.encode(b)))
        out["rich"] += [v1 for v1, _ in pairs]
        out["rich2"] += [v2 for _, v2 in pairs]
    return {name: np.stack(vectors) for name, vectors in out.items()}


def test_recorded_battles_encode_exactly_as_pinned() -> None:
    expected = np.load(PINS / "expected.npz")
    got = encode_recorded()
    for name in ("rich", "rich2"):
        want = expected[name]
        assert got[name].dtype == want.dtype == np.float32
        assert got[name].shape == want.shape
        bad = np.argwhere(got[name] != want)
        assert not len(bad), f"{name}: {len(bad)} floats differ, first (state, index) {bad[:5]}"


def clear_module_caches() -> None:
    """Forget everything the rich encoders cached outside an encoder instance."""
    calcview._calc_moves.clear()
    threat._score_data.clear()
    profile._static_cache.clear()
    profile._max_pp.clear()
    sets._summaries.clear()
    for piece in (
        profile._identity_part,
        profile._status_part,
        profile._item_part,
        profile._ability_part,
        profile._attack_types,
        sets.knowledge,
    ):
        piece.cache_clear()


class CheckedEncoder(SinglesSetsEncoder):
    """``singles_sets`` that also encodes each state uncached (a fresh encoder, module caches
    cleared, the calculator on the battle's own objects) and records any difference."""

    def __init__(self) -> None:
        super().__init__()
        self.states = 0
        self.problems: list[str] = []

    def encode(self, battle):  # type: ignore[no-untyped-def]
        vec = super().encode(battle)
        clear_module_caches()
        reference = SinglesSetsEncoder()
        reference.damage.read_once = False
        fresh = reference.encode(battle)
        self.states += 1
        if vec.dtype != fresh.dtype or not np.array_equal(vec, fresh):
            where = np.flatnonzero(vec != fresh)[:5]
            self.problems.append(f"{battle.battle_tag} turn {battle.turn}: differs at {where}")
        return vec


@pytest.mark.integration
def test_direct_battles_cached_equals_uncached() -> None:
    encoder = CheckedEncoder()
    env = DirectPokemonEnv(opponent="heuristic", encoder=encoder, seed=5)
    try:
        rng = np.random.default_rng(5)
        for _ in range(12):
            obs, _ = env.reset()
            while True:
                action = rng.choice(np.flatnonzero(obs["action_mask"]))
                obs, _, terminated, truncated, _ = env.step(action)
                if terminated or truncated:
                    break
    finally:
        env.close()
    assert encoder.problems == []
    assert encoder.states > 30
    assert encoder.damage.calls > encoder.states / 2  # the calculator really ran


if __name__ == "__main__" and sys.argv[1:] == ["--record"]:
    np.savez_compressed(PINS / "expected.npz", **encode_recorded())
    print(f"wrote {PINS / 'expected.npz'}")
