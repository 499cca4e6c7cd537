"""Direct-backend battle tags come from the env's seed alone: two processes under one seed
name their battles alike (decision-time search seeds its worlds from the tag, so a searched
evaluation repeats itself), other seeds name them apart."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

SCRIPT = """
import sys
from mapleenv.env import PokemonEnv
env = PokemonEnv("gen9randombattle", opponent="random", seed=int(sys.argv[1]))
try:
    print(env.reset()[1]["battle_tag"], env.reset()[1]["battle_tag"])
finally:
    env.close()
"""


def _tags(seed: int) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(seed)],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    return out.stdout.split()


def test_one_seed_names_its_battles_alike_in_every_process() -> None:
    first, again, other = _tags(7), _tags(7), _tags(8)
    assert first == again and len(set(first)) == 2
    assert not set(first) & set(other)
