"""``python -m mapleenv.engine.install``: quiet when the engine is installed, and a cached
wheel installs into a fresh environment without a build (one build per machine)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from engine_guard import engine_or_skip

from mapleenv.engine.pins import cached_wheel, wheel_dir

pytestmark = pytest.mark.integration  # runs the installer, pip and a new venv

ROOT = Path(__file__).resolve().parents[3]


def _install(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mapleenv.engine.install", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_setup_is_quiet_and_check_says_installed_when_it_is() -> None:
    engine_or_skip()
    done = _install("--setup")
    assert done.returncode == 0 and done.stdout + done.stderr == "", done
    done = _install("--check")
    assert done.returncode == 0 and done.stdout == "poke-engine 0.0.48 (gen 9) is installed\n"


@pytest.mark.timeout(180)
def test_a_cached_wheel_installs_into_a_fresh_venv_without_building(tmp_path: Path) -> None:
    engine_or_skip()
    wheel = cached_wheel()
    if wheel is None:
        pytest.skip("no wheel in this machine's engine cache (installed another way)")
    cache = tmp_path / "cache"
    wheel_dir(cache).mkdir(parents=True)
    shutil.copy(wheel, wheel_dir(cache))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    # Maple and its dependencies from this venv, after the fresh venv's own site-packages
    purelib = sysconfig.get_paths()["purelib"]
    env = {**os.environ, "MAPLE_ENGINE_CACHE": str(cache), "PYTHONPATH": f"{ROOT}:{purelib}"}
    code = "from mapleenv.engine.install import install; print(install())"
    done = subprocess.run(
        [str(python), "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert done.returncode == 0, done.stderr
    assert "installed from the wheel cache" in done.stdout, done.stdout
    fresh = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert (Path(fresh) / "poke_engine").is_dir()
    assert not (cache / "build.log").exists()  # nothing was built
