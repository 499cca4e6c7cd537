"""scripts/setup/sim_bundle.py: the bundle holds what the direct backend needs; a battle runs from
the unpacked bundle alone (MAPLE_SHOWDOWN_DIR pointing into it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BATTLE = """
from mapleenv.env import PokemonEnv
from mapleenv.showdown import find_showdown
env = PokemonEnv(battle_format="gen9randombattle", opponent="random", backend="direct")
obs, _ = env.reset(seed=0)
for _ in range(5):
    obs, reward, terminated, truncated, _ = env.step(int(obs["action_mask"].argmax()))
env.close()
print(find_showdown())
"""


@pytest.mark.integration
@pytest.mark.timeout(700)
def test_a_battle_runs_from_the_unpacked_bundle(tmp_path: Path) -> None:
    bundle = tmp_path / "sim.tar.xz"
    cmd = [
        sys.executable,
        str(ROOT / "scripts" / "setup" / "sim_bundle.py"),
        str(bundle),
        "--preset",
        "0",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["fits_64_mib"] and report["bundle_mib"] > 0 and report["node"] is None
    with tarfile.open(bundle) as tar:
        names = set(tar.getnames())
        assert "node_modules/pokemon-showdown/dist/sim/index.js" in names
        assert not [n for n in names if n.endswith(".map")]
        tar.extractall(tmp_path / "unpacked", filter="data")
    package = tmp_path / "unpacked" / "node_modules" / "pokemon-showdown"
    env = {**os.environ, "MAPLE_SHOWDOWN_DIR": str(package)}
    battle = subprocess.run(
        [sys.executable, "-c", BATTLE], capture_output=True, text=True, timeout=300, env=env
    )
    assert battle.returncode == 0, battle.stderr[-2000:]
    assert battle.stdout.strip().splitlines()[-1] == str(package)
