"""A format-2 checkpoint whose policy spec or weights are nonsense (docs/security.md: every
file is untrusted) is refused with one line naming the file and what is wrong, never a
traceback from inside torch when the network is rebuilt."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from builders import write_tiny_checkpoint
from warm_cli import run_python

from mapleenv.opponents import make_opponent
from mapleenv.policies import CheckpointError, load_checkpoint, read_snapshot

ROOT = Path(__file__).resolve().parents[3]
Edit = Callable[[dict[str, Any]], None]


def _model(key: str, value: Any) -> Edit:
    return lambda ckpt: ckpt["policy"]["model"].__setitem__(key, value)


def _spec(key: str, value: Any) -> Edit:
    return lambda ckpt: ckpt["policy"].__setitem__(key, value)


def _weights(edit: Callable[[dict[str, Any]], Any]) -> Edit:
    return lambda ckpt: edit(ckpt["model"])


ENCODER_WEIGHT = "trunk.encoder.0.weight"
# name: (how the tiny checkpoint is spoiled, a fragment of the one line)
CASES: dict[str, tuple[Edit, str]] = {
    "obs_dim_string": (_spec("obs_dim", "big"), "policy.obs_dim must be a positive integer"),
    "obs_dim_negative": (_spec("obs_dim", -5), "policy.obs_dim must be a positive integer"),
    "obs_dim_bool": (_spec("obs_dim", True), "policy.obs_dim must be a positive integer"),
    "n_actions_zero": (_spec("n_actions", 0), "policy.n_actions must be a positive integer"),
    "n_actions_missing": (lambda c: c["policy"].pop("n_actions"), "spec lacks n_actions"),
    "model_not_a_dict": (_spec("model", [1, 2]), "policy.model must be a dict"),
    "unknown_kind": (_model("kind", "gpt"), "policy.model.kind must be one of lstm|mlp|attention"),
    "key_of_wrong_type": (_model(7, 1), "policy.model has unknown setting 7"),
    "aux_classes_negative": (_model("aux_classes", -1), "aux_classes must be a positive"),
    "unknown_setting": (_model("layers", 3), "policy.model has unknown setting 'layers'"),
    "hidden_size_string": (_model("hidden_size", "x"), "policy.model.hidden_size must be a"),
    "hidden_size_float": (_model("hidden_size", 16.0), "policy.model.hidden_size must be a"),
    "sizes_not_a_list": (_model("encoder_sizes", 32), "policy.model.encoder_sizes must be a list"),
    "sizes_negative": (_model("encoder_sizes", [-1]), "policy.model.encoder_sizes must be a"),
    "trunk_flag_string": (
        _model("shared_trunk", "yes"),
        "policy.model.shared_trunk must be a bool",
    ),
    "activation": (_model("activation", "sigmoid"), "policy.model.activation must be one of"),
    "too_many_layers": (_model("num_layers", 10**6), "policy.model.num_layers must be at most"),
    "attention_on_simple": (_model("kind", "attention"), "does not build a network"),
    # a huge spec builds on the meta device only: past the parameter bound, nothing allocated
    "huge_hidden": (_model("hidden_size", 10**5), "more than the 100000000 allowed"),
    "large_hidden": (_model("hidden_size", 2000), "has shape (64, 32), the network"),
    "overflowing_hidden": (_model("hidden_size", 10**9), "does not build a network"),
    "obs_dim_mismatch": (_spec("obs_dim", 10), f"weight '{ENCODER_WEIGHT}' has shape"),
    "weight_missing": (_weights(lambda m: m.pop(ENCODER_WEIGHT)), "lacks 1 entry"),
    "weight_extra": (_weights(lambda m: m.__setitem__("x", torch.zeros(1))), "has unexpected"),
    "weight_string": (
        _weights(lambda m: m.__setitem__(ENCODER_WEIGHT, "w")),
        "is not a floating-point tensor",
    ),
    "weight_int": (
        _weights(lambda m: m.__setitem__(ENCODER_WEIGHT, torch.zeros(32, 8, dtype=torch.long))),
        "is not a floating-point tensor",
    ),
}


def spoiled(tmp_path: Path, edit: Edit, name: str = "bad.pt") -> Path:
    ckpt = load_checkpoint(write_tiny_checkpoint(tmp_path / "tiny.pt"))
    edit(ckpt)
    path = tmp_path / name
    torch.save(ckpt, path)
    return path


@pytest.mark.parametrize("case", list(CASES))
def test_a_nonsense_spec_or_weights_is_one_line_naming_the_file(case: str, tmp_path: Path):
    edit, fragment = CASES[case]
    path = spoiled(tmp_path, edit)
    for load in (read_snapshot, lambda p: make_opponent(f"policy:{p}")):
        with pytest.raises(CheckpointError) as info:
            load(path)
        message = str(info.value)
        assert "\n" not in message and str(path) in message, message
        assert fragment in message, message


def test_the_tiny_and_shipped_checkpoints_still_pass(tmp_path: Path):
    for kind in ("lstm", "mlp"):
        read_snapshot(write_tiny_checkpoint(tmp_path / f"{kind}.pt", kind=kind))
    assert read_snapshot(ROOT / "models" / "attention_ppo_gen9random.pt")["policy"]["n_actions"]
    # aux_classes 0 means "no auxiliary head" (what the default spells out), not nonsense
    no_head = spoiled(tmp_path, _model("aux_classes", 0), "no_head.pt")
    assert read_snapshot(no_head)["policy"]["model"]["aux_classes"] == 0


@pytest.fixture(scope="module")
def crafted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """The files every entry point is given: a nonsense spec (a string hidden size, which
    once ended evaluate with a TypeError traceback from torch) and weights whose shapes
    do not fit the network their spec builds; with a fragment of the line for each."""
    directory = tmp_path_factory.mktemp("crafted")
    return {
        name: (spoiled(directory, CASES[name][0], f"{name}.pt"), CASES[name][1])
        for name in ("hidden_size_string", "obs_dim_mismatch")
    }


# each way a checkpoint comes in: ``{bad}`` is the crafted file, ``{good}`` a tiny good one
ENTRY_POINTS = {
    "evaluate": ["trainer.evaluate", "checkpoint={bad}", "battles=2", "num_envs=1"],
    "play": ["trainer.play", "checkpoint={bad}"],
    "resume": ["trainer", "+experiment=smoke", "resume={bad}"],
    "policy_opponent": [
        *("trainer.evaluate", "checkpoint={good}", "opponents=[policy:{bad}]"),
        *("battles=2", "num_envs=1"),
    ],
    "policy_training_opponent": ["trainer", "+experiment=smoke", "env.opponent=policy:{bad}"],
}


@pytest.mark.integration
@pytest.mark.timeout(400)
@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_each_entry_point_says_it_in_one_line_with_exit_code_2(
    entry: str, crafted: dict[str, tuple[Path, str]], tmp_path: Path
):
    """One error log record on stderr naming the file (stdout is for results), exit code
    2, no traceback, nothing written: the run folder is never made."""
    good = write_tiny_checkpoint(tmp_path / "good.pt")
    for bad, fragment in crafted.values():
        run = tmp_path / f"run_{bad.stem}"
        args = [a.format(bad=bad, good=good) for a in ENTRY_POINTS[entry]]
        proc = run_python(
            [sys.executable, "-m", *args, f"hydra.run.dir={run}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=180,
        )
        out = proc.stderr
        assert proc.returncode == 2, out[-3000:]
        assert "Traceback" not in out and proc.stdout == "", out[-3000:]
        errors = [line for line in out.splitlines() if "ERROR" in line]
        assert len(errors) == 1 and len(out.strip().splitlines()) == 1, out[-3000:]
        assert str(bad) in errors[0] and fragment in errors[0], errors[0]
        assert not run.exists()
