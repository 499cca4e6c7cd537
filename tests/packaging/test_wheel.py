"""A wheel built from the checkout, installed into a fresh venv, runs Maple's commands from a
folder outside the checkout: the configs come from the wheel (``pkg://maple_conf``), the
console scripts are the wheel's, and the simulator is the one ``MAPLE_SHOWDOWN_DIR`` names
(what ``maple-setup-sim`` would install; the checkout's ``node_modules`` here, so that the
test downloads nothing).

The fresh venv sees the dependencies of the test's own venv through a ``.pth`` line (torch
and the rest are not downloaded again), and pip installs the wheel with ``--no-index``: a
dependency the wheel declares that is not installed fails the install instead of fetching
it. A ``.pth`` line adds a folder without reading the ``.pth`` files in it, so the
checkout's editable install stays out of the fresh venv (checked below).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

# the first test also builds the wheel and installs it into a fresh venv; one xdist group,
# so that `make test`'s two workers do not each build it (the fixture is per module and worker)
pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.xdist_group("wheel"),
]

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "package.json", "package-lock.json")
PACKAGES = ("conf", "mapleenv", "trainer")
AGENT = ROOT / "models" / "attention_ppo_gen9random.pt"
TIMEOUT = 900  # seconds per command: generous for a loaded 2-core box


@dataclass(frozen=True)
class Installed:
    venv: Path
    work: Path  # a folder outside the checkout, where the commands run
    env: dict[str, str]

    def run(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            args,
            cwd=self.work,
            env=env or self.env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )

    def ok(self, *args: str) -> str:
        proc = self.run(*args)
        assert proc.returncode == 0, f"{args}: {proc.returncode}\n{proc.stderr[-3000:]}"
        return proc.stdout

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")


def _check(args: list[str], cwd: Path) -> None:
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, f"{args}: {proc.returncode}\n{proc.stderr[-3000:]}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        shutil.copy2(ROOT / name, src / name)
    for name in PACKAGES:  # a copy: the build leaves build/ and *.egg-info beside the sources
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip"]
    build = ["wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"), str(src)]
    _check([*pip, *build], tmp)  # absolute paths: pip takes a bare "src" for something else
    (wheel,) = (tmp / "dist").glob("maple-*.whl")

    venv = tmp / "venv"
    _check([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp)
    python = str(venv / "bin" / "python")
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "maple_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    _check([python, "-m", "pip", "install", "-q", "--no-index", str(wheel)], tmp)

    work = tmp / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["MAPLE_SHOWDOWN_DIR"] = str(ROOT / "node_modules" / "pokemon-showdown")
    env["MAPLE_DATA_DIR"] = str(tmp / "data")  # empty: nothing found there
    return Installed(venv=venv, work=work, env=env)


def test_the_packages_and_configs_are_the_wheels(installed: Installed) -> None:
    code = (
        "import json, mapleenv, trainer, maple_conf; "
        "from trainer.apps.hydra_app import config_path, conf_dir; "
        "print(json.dumps([mapleenv.__file__, trainer.__file__, str(conf_dir()), config_path()]))"
    )
    *files, search_path = json.loads(installed.ok(installed.python, "-c", code))
    for path in files:
        assert Path(path).is_relative_to(installed.venv), path
    assert search_path == "pkg://maple_conf"
    assert (Path(files[2]) / "experiment" / "smoke.yaml").is_file()


def test_the_simulator_is_found_or_named_in_one_line(installed: Installed) -> None:
    found = installed.ok("maple-setup-sim", "--check")
    assert installed.env["MAPLE_SHOWDOWN_DIR"] in found and "0.11.11" in found

    env = {k: v for k, v in installed.env.items() if k != "MAPLE_SHOWDOWN_DIR"}
    missing = installed.run("maple-setup-sim", "--check", env=env)
    assert missing.returncode == 2
    lines = missing.stderr.strip().splitlines()
    assert len(lines) == 1 and "not found" in lines[0] and "maple-setup-sim" in lines[0], lines

    # where maple-setup-sim installs it (here a link to the checkout's): found there
    installs = Path(env["MAPLE_DATA_DIR"]) / "showdown" / "node_modules"
    installs.mkdir(parents=True)
    (installs / "pokemon-showdown").symlink_to(ROOT / "node_modules" / "pokemon-showdown")
    found = installed.run("maple-setup-sim", "--check", env=env)
    assert found.returncode == 0 and str(installs / "pokemon-showdown") in found.stdout


def test_maple_train_runs_the_smoke_experiment(installed: Installed) -> None:
    installed.ok("maple-train", "+experiment=smoke", "hydra.run.dir=smoke")
    run_dir = installed.work / "smoke"
    assert (run_dir / "checkpoints" / "last.pt").is_file()
    rows = (run_dir / "metrics.csv").read_text().strip().splitlines()
    assert rows[0].startswith("global_step") or "global_step" in rows[0]
    assert len(rows) >= 2
    assert (run_dir / "__main__.log").is_file()  # the job is named as under python -m trainer


def test_maple_evaluate_plays_the_shipped_agent(installed: Installed) -> None:
    shutil.copy2(AGENT, installed.work / "agent.pt")
    installed.ok(
        "maple-evaluate",
        "checkpoint=agent.pt",
        "opponents=[random]",
        "battles=4",
        "num_envs=2",
        "output=eval.json",
        "hydra.run.dir=eval",
    )
    result = json.loads((installed.work / "eval.json").read_text())["opponents"]["random"]
    assert result["battles"] == 4 and 0 <= result["wins"] <= 4
    assert (installed.work / "eval" / "evaluate.log").is_file()


def test_the_other_commands_run(installed: Installed) -> None:
    assert "mode" in installed.ok("maple-play", "--help")
    assert "maple-convert-checkpoint" in installed.ok("maple-convert-checkpoint", "--help")
    assert "--check" in installed.ok("maple-setup-sim", "--help")
    shutil.copy2(AGENT, installed.work / "to_export.pt")
    out = installed.ok("maple-export-checkpoint", "to_export.pt", "small.pt", "--policy-only")
    summary = json.loads(out)
    assert summary["out_bytes"] <= summary["source_bytes"]
    assert (installed.work / "small.pt").is_file()


GYM = """
import json, gymnasium, mapleenv
env = gymnasium.make("mapleenv/Showdown-v0", battle_format="gen9randombattle", opponent="random")
obs, info = env.reset(seed=0)
steps, done = 0, False
while not done and steps < 5:
    action = int(obs["action_mask"].nonzero()[0][0])
    obs, reward, terminated, truncated, info = env.step(action)
    done, steps = terminated or truncated, steps + 1
env.close()
print(json.dumps({"steps": steps, "obs": int(obs["observation"].shape[0])}))
"""


def test_gym_make_plays_from_the_wheel(installed: Installed) -> None:
    out = json.loads(installed.ok(installed.python, "-c", GYM).strip().splitlines()[-1])
    assert out["steps"] >= 1 and out["obs"] > 0
