"""Checkpoint format 2 (docs/training.md, docs/security.md): plain data read with
``weights_only=True``; a pickle that would run code, an older pickled checkpoint or a foreign
file is one line (exit code 2 from every CLI); ``maple-convert-checkpoint`` is the
one trust step; plugins come only from the user, never from a checkpoint."""

from __future__ import annotations

import ast
import json
import os
import random
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from builders import write_illegal_team, write_tiny_checkpoint
from memory_env import ITER_STEPS, memory_cfg
from warm_cli import run_python

from mapleenv.opponents import FrozenPolicy, make_opponent
from mapleenv.plugins import import_plugins
from mapleenv.policies import read_snapshot
from trainer.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from trainer.config import to_train_config
from trainer.policy import build_policy
from trainer.run.checkpoint import rng_state, set_rng_state
from trainer.run.train import Trainer, train

# the tests marked backends use the default backend: the CI's second pass repeats them with
# MAPLE_BACKEND=server (the others name their backend, or start no env)

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ROOT / "models" / "attention_ppo_gen9random.pt"
RECORDED = ROOT / "tests" / "data" / "shipped_model_outputs.npz"
PLAIN = (str, int, float, bool, type(None))


class _RunsCode:
    """Pickles as a call that creates ``marker``: what a crafted checkpoint can carry."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').close()",))


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "payload-ran"


@pytest.fixture
def evil(tmp_path: Path, marker: Path) -> Path:
    """A checkpoint-looking file whose unpickling creates ``marker`` (checked: the full
    unpickler does run it)."""
    path = tmp_path / "evil.pt"
    torch.save({"format_version": 2, "policy": {}, "model": {"w": _RunsCode(marker)}}, path)
    torch.load(path, weights_only=False)  # the proof that it would run
    assert marker.exists()
    marker.unlink()
    return path


def write_format_1(path: Path) -> Path:
    """A checkpoint as Maple wrote it before format 2: pickled NumPy RNG state and self-play
    weights, beside the tensors."""
    tiny = load_checkpoint(write_tiny_checkpoint(path.with_suffix(".tmp.pt")))
    snapshot = {"id": 0, "encoder": "simple", "policy": tiny["policy"]}
    snapshot["model"] = {k: v.numpy() for k, v in tiny["model"].items()}
    rng = {"python": random.getstate(), "numpy": np.random.get_state()}
    rng["torch"] = torch.get_rng_state()
    old = {k: tiny[k] for k in ("model", "policy", "config", "global_step", "iteration")}
    old |= {"format_version": 1, "rng": rng}
    old["selfplay"] = {"recent": [snapshot], "archive": [], "next_id": 1}
    torch.save(old, path)
    return path


def run_cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    proc = run_python(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env
    )
    return proc.returncode, proc.stdout + proc.stderr


def assert_one_line(out: str, *needles: str) -> str:
    assert "Traceback" not in out, out[-3000:]
    lines = [line for line in out.splitlines() if all(n in line for n in needles)]
    assert len(lines) == 1, out[-3000:]
    assert sum("ERROR" in line for line in out.splitlines()) <= 1, out[-3000:]
    return lines[0]


# ------------------------------------------------------------------ files that run code


def test_a_pickle_that_would_run_code_is_refused_by_every_loader(evil: Path, marker: Path):
    loaders = (
        load_checkpoint,
        read_snapshot,
        lambda path: make_opponent(f"policy:{path}"),
        lambda path: make_opponent(f"mix:random=1,policy_greedy:{path}=1"),
    )
    for load in loaders:
        with pytest.raises(CheckpointError) as info:
            load(evil)
        message = str(info.value)
        assert "\n" not in message and str(evil) in message
        assert "would run code it names (builtins.exec)" in message
    assert not marker.exists()


def _cli_cases(evil: Path, good: Path, tmp: Path) -> dict[str, list[str]]:
    hydra = f"hydra.run.dir={tmp / 'hydra'}"
    return {
        "evaluate": ["-m", "trainer.evaluate", f"checkpoint={evil}", hydra],
        "evaluate_opponent": [
            *("-m", "trainer.evaluate", f"checkpoint={good}", f"opponents=[policy:{evil}]"),
            hydra,
        ],
        "play": ["-m", "trainer.play", f"checkpoint={evil}", hydra],
        "resume": ["-m", "trainer", "env=gym", "env.id=CartPole-v1", f"resume={evil}", hydra],
        "train_opponent_mix": [
            *("-m", "trainer", "+experiment=smoke", "tensorboard=false"),
            f"env.opponent='mix:random=1,policy:{evil}=1'",
            hydra,
        ],
        "export": [
            *("-m", "trainer.apps.export_checkpoint"),
            str(evil),
            str(tmp / "x.pt"),
        ],
    }


@pytest.mark.parametrize(
    "cli",
    [
        *("evaluate", "evaluate_opponent", "play", "resume"),
        pytest.param("train_opponent_mix", marks=pytest.mark.backends),  # checks the backend first
        "export",
    ],
)
@pytest.mark.integration
def test_every_cli_refuses_it_in_one_line_with_exit_code_2(
    cli: str, evil: Path, marker: Path, tmp_path: Path
):
    good = write_tiny_checkpoint(tmp_path / "tiny.pt")
    code, out = run_cli(*_cli_cases(evil, good, tmp_path)[cli])
    assert code == 2, out[-3000:]
    assert_one_line(out, str(evil), "would run code")
    assert not marker.exists()
    assert not (tmp_path / "x.pt").exists()


# ------------------------------------------------------------------ older checkpoints


@pytest.mark.integration
def test_an_older_checkpoint_says_how_to_convert_it(tmp_path: Path):
    old = write_format_1(tmp_path / "old.pt")
    with pytest.raises(CheckpointError, match="older Maple checkpoint") as info:
        load_checkpoint(old)
    assert f"maple-convert-checkpoint {old} <new.pt>" in str(info.value)
    code, out = run_cli("-m", "trainer.evaluate", f"checkpoint={old}", f"hydra.run.dir={tmp_path}")
    assert code == 2
    assert_one_line(out, str(old), "maple-convert-checkpoint")


@pytest.mark.integration
def test_convert_refuses_what_is_not_a_maple_checkpoint(tmp_path: Path):
    script = ("-m", "trainer.apps.convert_checkpoint")
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(os.urandom(4096))
    foreign = tmp_path / "foreign.pt"
    torch.save({"weights": np.zeros(3)}, foreign)
    for bad, why in ((garbage, "cannot read"), (foreign, "not a Maple checkpoint")):
        code, out = run_cli(*script, str(bad), str(tmp_path / "new.pt"))
        assert code == 2 and out.count("\n") == 1, out
        assert out.startswith("convert_checkpoint: ") and why in out and str(bad) in out
    code, out = run_cli(*script, str(tmp_path / "missing.pt"), str(tmp_path / "new.pt"))
    assert code == 2 and "checkpoint not found" in out
    assert not (tmp_path / "new.pt").exists()


@pytest.mark.integration  # conversion does not depend on the backend: the default one only
def test_a_converted_older_checkpoint_keeps_its_state_and_evaluates(tmp_path: Path):
    old = write_format_1(tmp_path / "old.pt")
    before = torch.load(old, weights_only=False)  # the test's own file
    new = tmp_path / "new.pt"
    code, out = run_cli("-m", "trainer.apps.convert_checkpoint", str(old), str(new))
    assert code == 0, out
    summary = json.loads(out.splitlines()[-1])
    assert summary["source_format"] == 1 and summary["format_version"] == 2

    after = torch.load(new, weights_only=True)
    assert after["format_version"] == 2 and after["config"] == before["config"]
    assert all(torch.equal(before["model"][k], v) for k, v in after["model"].items())
    [snapshot] = after["selfplay"]["recent"]
    old_snapshot = before["selfplay"]["recent"][0]["model"]
    assert all(np.array_equal(old_snapshot[k], v.numpy()) for k, v in snapshot["model"].items())
    set_rng_state(after["rng"])  # the converted RNG state continues the old streams
    np.random.set_state(before["rng"]["numpy"])
    expected = np.random.random(3)
    set_rng_state(after["rng"])
    assert np.array_equal(np.random.random(3), expected)

    output = tmp_path / "eval.json"
    code, out = run_cli(
        *("-m", "trainer.evaluate", f"checkpoint={new}", "opponents=[random]", "battles=2"),
        *("num_envs=1", f"output={output}", f"hydra.run.dir={tmp_path / 'eval'}"),
    )
    assert code == 0, out[-3000:]
    assert json.loads(output.read_text())["opponents"]["random"]["battles"] == 2


# ------------------------------------------------------------------ the format itself


def assert_plain(value, where: str = "checkpoint") -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            assert type(key) in (str, int), f"{where}: key {key!r}"
            assert_plain(item, f"{where}[{key!r}]")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            assert_plain(item, f"{where}[{i}]")
    else:
        assert type(value) in PLAIN or type(value) is torch.Tensor, f"{where}: {type(value)}"


@pytest.mark.integration
def test_a_training_checkpoint_is_plain_data_and_resume_restores_it_exactly(tmp_path: Path):
    overrides = (f"total_steps={2 * ITER_STEPS}", "algo.norm_reward=true")
    train(memory_cfg(*overrides), tmp_path)
    path = tmp_path / "checkpoints" / "last.pt"
    raw = torch.load(path, weights_only=True)  # what any tool can read without trusting it
    assert_plain(raw)
    assert raw["format_version"] == 2 and raw["versions"]["torch"] == torch.__version__
    assert raw["rng"]["torch"].dtype == torch.uint8 and torch.is_tensor(raw["rng"]["numpy"][1])
    json.dumps({k: raw[k] for k in ("config", "policy", "versions", "reward_norm")})

    cfg = memory_cfg(f"total_steps={4 * ITER_STEPS}", "algo.norm_reward=true", f"resume={path}")
    resumed = Trainer(to_train_config(cfg), tmp_path, {}, resume_from=path)
    try:
        state = resumed.policy.state_dict()
        assert all(torch.equal(state[k], v) for k, v in raw["model"].items())
        optimizer = resumed.optimizer.state_dict()
        assert optimizer["param_groups"] == raw["optimizer"]["param_groups"]
        assert raw["optimizer"]["state"]  # the saved run stepped its optimizer
        for key, moments in raw["optimizer"]["state"].items():
            assert all(torch.equal(optimizer["state"][key][n], t) for n, t in moments.items())
        assert resumed.reward_norm.state_dict() == raw["reward_norm"]
        now = rng_state()  # the saved RNG streams continue where the saved run left them
        assert now["python"] == raw["rng"]["python"]
        assert torch.equal(now["numpy"][1], raw["rng"]["numpy"][1])
        assert now["numpy"][2:] == raw["rng"]["numpy"][2:]
        assert torch.equal(now["torch"], raw["rng"]["torch"])
        row = resumed.run()
    finally:
        resumed.close()
    assert row is not None and row["global_step"] == 4 * ITER_STEPS


def test_a_payload_that_is_not_plain_data_is_not_written(tmp_path: Path):
    path = save_checkpoint(tmp_path / "last.pt", {"global_step": 1})
    with pytest.raises(OSError, match=r"checkpoint\['extra'\] is a _RunsCode"):
        save_checkpoint(path, {"global_step": 2, "extra": _RunsCode(tmp_path / "m")})
    assert load_checkpoint(path)["global_step"] == 1


def test_the_shipped_model_is_format_2_and_gives_its_recorded_outputs():
    raw = torch.load(SHIPPED, weights_only=True)
    assert raw["format_version"] == 2
    ckpt = load_checkpoint(SHIPPED)  # contract 7: policy spec and state dict
    spec = ckpt["policy"]
    policy = build_policy(spec["obs_dim"], spec["n_actions"], spec["model"])
    policy.load_state_dict(ckpt["model"])
    policy.eval()
    recorded = np.load(RECORDED)  # its outputs when shipped (tests/data/README.md)
    state = policy.initial_state(recorded["obs"].shape[1])
    with torch.no_grad():
        for t in range(recorded["obs"].shape[0]):
            logits, value, state = policy(
                torch.from_numpy(recorded["obs"][t].astype(np.float32)),
                torch.from_numpy(recorded["mask"][t]),
                state,
                torch.from_numpy(recorded["episode_start"][t]),
            )
            torch.testing.assert_close(logits.numpy(), recorded["logits"][t], rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(value.numpy(), recorded["values"][t], rtol=1e-5, atol=1e-5)


def _unsafe_loads(path: Path) -> list[str]:
    """Calls in ``path`` that could unpickle with code: ``torch.load`` without a literal
    ``weights_only=True``, ``pickle.load(s)``, widening torch's safe globals."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call):
            continue
        name = ast.unparse(node.func)
        safe = any(
            k.arg == "weights_only" and isinstance(k.value, ast.Constant) and k.value.value is True
            for k in node.keywords
        )
        if (name.endswith("torch.load") and not safe) or name in ("pickle.load", "pickle.loads"):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
        if name.endswith(("add_safe_globals", "safe_globals")):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
    return found


def test_no_code_loads_a_checkpoint_with_the_full_unpickler_but_the_converter():
    converter = ROOT / "trainer" / "apps" / "convert_checkpoint.py"
    sources = [p for d in ("mapleenv", "trainer", "scripts") for p in (ROOT / d).rglob("*.py")]
    assert len(sources) > 50
    unsafe = [hit for p in sources if p != converter for hit in _unsafe_loads(p)]
    unsafe += [str(p) for p in sources if p != converter and "weights_only=False" in p.read_text()]
    assert unsafe == []
    assert _unsafe_loads(converter)  # the scan sees the one it allows


# ------------------------------------------------------------------ plugins


def write_plugin(directory: Path, name: str, marker: Path) -> str:
    """A plugin module that leaves ``marker`` when imported (and registers an encoder)."""
    (directory / f"{name}.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n"
        "from mapleenv.encoders import SinglesBasicEncoder\n"
        "def make():\n"
        "    return SinglesBasicEncoder()\n"
    )
    return name


def tiny_with(path: Path, **env: object) -> Path:
    ckpt = load_checkpoint(write_tiny_checkpoint(path))
    ckpt["config"]["env"] |= env
    return save_checkpoint(path, ckpt)


def test_a_checkpoint_naming_a_plugin_does_not_import_it(tmp_path, marker, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    plugin = write_plugin(tmp_path, "maple_test_named_plugin", marker)
    named = tiny_with(tmp_path / "named.pt", plugins=[plugin])
    FrozenPolicy.from_snapshot(read_snapshot(named))
    make_opponent(f"policy:{named}")
    # an encoder from a module the file names: refused, with what to pass if trusted
    coded = tiny_with(tmp_path / "coded.pt", plugins=[plugin], encoder=f"{plugin}:make")
    with pytest.raises(CheckpointError, match=rf"plugins=\[{plugin}\]") as info:
        read_snapshot(coded)
    assert f"encoder '{plugin}:make' names a module to import" in str(info.value)
    assert plugin not in sys.modules and not marker.exists()
    import_plugins([plugin])  # the user's own choice: now it is imported, and the file loads
    assert marker.exists()
    assert read_snapshot(coded)["config"]["env"]["encoder"] == f"{plugin}:make"


@pytest.mark.integration
def test_evaluate_names_the_plugins_to_pass_and_imports_none(tmp_path, marker):
    plugin = write_plugin(tmp_path, "maple_test_evaluate_plugin", marker)
    named = tiny_with(tmp_path / "named.pt", plugins=[plugin])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    team = write_illegal_team(tmp_path / "team.txt")
    code, out = run_cli(
        *("-m", "trainer.evaluate", f"checkpoint={named}", "battle_format=gen9ou", f"team={team}"),
        f"hydra.run.dir={tmp_path / 'eval'}",
        env=env,
    )
    assert code == 2 and "is not legal in gen9ou" in out, out[-3000:]  # stopped after the check
    line = assert_one_line(out, "WARNING", str(named))
    assert f"plugins ['{plugin}'], which are not imported" in line
    assert f"pass plugins=[{plugin}]" in line
    assert not marker.exists()


@pytest.mark.integration
def test_resume_imports_the_plugins_of_the_command_line_not_the_checkpoints(
    tmp_path, marker, monkeypatch
):
    monkeypatch.syspath_prepend(str(tmp_path))
    plugin = write_plugin(tmp_path, "maple_test_resume_plugin", marker)
    train(memory_cfg(f"total_steps={ITER_STEPS}"), tmp_path / "run")
    path = tmp_path / "run" / "checkpoints" / "last.pt"
    ckpt = load_checkpoint(path)
    ckpt["config"]["env"]["plugins"] = [plugin]
    save_checkpoint(path, ckpt)
    train(memory_cfg(f"total_steps={2 * ITER_STEPS}", f"resume={path}"), tmp_path / "run")
    assert load_checkpoint(path)["global_step"] == 2 * ITER_STEPS
    assert plugin not in sys.modules and not marker.exists()
