"""Extension points by the documented route (docs/extending.md): a plugin module on the
path, named in ``env.plugins``, registers an opponent, an encoder and a reward that the CLI
and ``make_vector_env`` then use by name, in real env workers with a real simulator.

The plugin is ``examples/my_plugin.py``, the code docs/extending.md shows.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import builders
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from mapleenv.vector import make_vector_env
from trainer.run.checkpoint import load_checkpoint

# the tests marked backends use the default backend: the CI's second pass repeats them with
# MAPLE_BACKEND=server (the others name their backend, or start no env)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PLUGIN_ARGS = (
    "env.plugins=[my_plugin]",
    "env.opponent=first_move",
    "env.encoder=hp_turn",
    "env.reward_fn=turn_penalty",
)


def run_module(module: str, *args: str, timeout: float = 280) -> subprocess.CompletedProcess:
    """``python -m <module> <args>`` from the repo root with examples/ on PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(EXAMPLES), env.get("PYTHONPATH")]))
    return builders.run_module(module, *args, timeout=timeout, env=env)


@pytest.mark.backends
@pytest.mark.integration
@pytest.mark.timeout(600)
def test_cli_trains_and_evaluates_with_a_plugin(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc = run_module(
        "trainer", "+experiment=smoke", f"hydra.run.dir={run_dir}", "total_steps=64", *PLUGIN_ARGS
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "vs first_move" in out
    ckpt = load_checkpoint(run_dir)
    assert ckpt["global_step"] == 64
    assert ckpt["policy"]["obs_dim"] == 3  # the plugin's encoder, built in the workers
    assert ckpt["config"]["env"]["plugins"] == ["my_plugin"]
    assert ckpt["config"]["env"]["reward_fn"] == "turn_penalty"

    # The checkpoint names its plugin, but a file does not pick the code that runs: without
    # plugins= the encoder is unknown and evaluation stops in one line saying what to pass.
    output = tmp_path / "eval.json"
    evaluate = ("trainer.evaluate", f"checkpoint={run_dir}", "battles=2", "num_envs=1")
    proc = run_module(*evaluate, "opponents=[random]", f"hydra.run.dir={tmp_path / 'no'}")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-4000:]
    assert "Traceback" not in out
    [error] = [line for line in out.splitlines() if "ERROR" in line]
    assert "encoder 'hp_turn'" in error and "plugins=[my_plugin]" in error
    # Given by the user, the plugin is imported (encoder) in the evaluation's own workers;
    # the opponent comes from the same plugin.
    proc = run_module(
        *evaluate,
        "plugins=[my_plugin]",
        "opponents=[first_move]",
        f"output={output}",
        f"hydra.run.dir={tmp_path / 'eval'}",
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    result = json.loads(output.read_text())["opponents"]["first_move"]
    assert result["battles"] == 2


@pytest.mark.integration
def test_cli_names_a_plugin_that_cannot_be_imported(tmp_path: Path) -> None:
    proc = run_module(
        "trainer", "+experiment=smoke", f"hydra.run.dir={tmp_path}", "env.plugins=[no_such_plugin]"
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-4000:]
    assert "env.plugins: plugin module 'no_such_plugin' cannot be imported" in out
    assert "Traceback" not in out


@pytest.mark.backends
@pytest.mark.integration
@pytest.mark.timeout(300)
def test_vector_env_uses_the_plugin_in_its_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    # the kwargs trainer.envs.vector passes for env.plugins/opponent/encoder/reward_fn/reward
    monkeypatch.syspath_prepend(str(EXAMPLES))  # spawned workers get the parent's sys.path
    envs = make_vector_env(
        1,
        plugins=["my_plugin"],
        opponent="first_move",
        encoder="hp_turn",
        reward_fn="turn_penalty",
        reward={"victory_value": 1.0},
        seed=3,
        autoreset_mode=AutoresetMode.SAME_STEP,
    )
    try:
        assert "my_plugin.FirstMovePlayer" in envs.call("call_opponent", "__repr__")[0]
        obs, _ = envs.reset(seed=3)
        rng = np.random.default_rng(0)
        total, final = 0.0, None
        for _ in range(2000):
            assert obs["observation"].shape == (1, 3)
            assert ((obs["observation"] >= 0) & (obs["observation"] <= 1)).all()
            action = rng.choice(np.flatnonzero(obs["action_mask"][0]))
            obs, reward, terminated, truncated, info = envs.step(np.array([action]))
            total += float(reward[0])
            if terminated[0] or truncated[0]:
                final = {k: v[0] for k, v in info["final_info"].items() if not k.startswith("_")}
                break
        assert final is not None, "the battle did not end"
        assert "aborted" not in final
        # TurnPenalty: the shaped reward (+1 win, -1 loss, 0 tie) minus 0.01 per turn played
        shaped = total + 0.01 * int(final["turns"])
        if final["won"]:
            assert shaped == pytest.approx(1.0, abs=1e-5)
        else:
            assert min(abs(shaped + 1.0), abs(shaped)) < 1e-5, shaped
    finally:
        envs.close()
