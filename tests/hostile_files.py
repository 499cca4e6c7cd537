"""Checkpoints a stranger could send (issue 34): small files built to exhaust memory, fields
of the wrong type, values nested deep or huge. Each builder writes one file next to a tiny
legitimate checkpoint and returns its path; :data:`HOSTILE` names them with a fragment of
the one line Maple must answer with."""

from __future__ import annotations

import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from builders import write_tiny_checkpoint

from mapleenv.policies import build_policy, load_checkpoint


def tiny(directory: Path) -> dict[str, Any]:
    """The tiny legitimate checkpoint, loaded (to spoil and save again)."""
    return load_checkpoint(write_tiny_checkpoint(directory / "tiny.pt"))


def stride0(path: Path, sizes: list[int]) -> Path:
    """A few-KB file whose spec names an MLP with layers of ``sizes`` and whose every
    weight is a 4-byte storage expanded to the full shape (stride 0): the shapes fit."""
    ckpt = tiny(path.parent)
    model = {"kind": "mlp", "encoder_sizes": sizes, "hidden_size": 16}
    with torch.device("meta"):
        shapes = build_policy(1000, 26, model).state_dict()
    ckpt["policy"] = {"obs_dim": 1000, "n_actions": 26, "model": model}
    ckpt["model"] = {k: torch.zeros(1).expand(v.shape) for k, v in shapes.items()}
    torch.save(ckpt, path)
    return path


def deflate_bomb(path: Path, megabytes: int = 64) -> Path:
    """A tiny checkpoint carrying ``megabytes`` of zeros, its records deflate-compressed
    in the zip (the file is a few hundred KB; ``torch.load`` would expand it all)."""
    ckpt = tiny(path.parent)
    ckpt["padding"] = torch.zeros(megabytes << 18)
    plain = path.with_suffix(".plain.pt")
    torch.save(ckpt, plain)
    with zipfile.ZipFile(plain) as source, zipfile.ZipFile(path, "w") as bomb:
        for info in source.infolist():
            bomb.writestr(info.filename, source.read(info), compress_type=zipfile.ZIP_DEFLATED)
    plain.unlink()
    return path


def nested(depth: int, leaf: Any = 16) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def spoiled(path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """The tiny checkpoint with ``edit`` applied, saved with ``torch.save`` (the recursion
    limit raised: a deep value pickles recursively)."""
    ckpt = tiny(path.parent)
    edit(ckpt)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 40_000))
    try:
        torch.save(ckpt, path)
    finally:
        sys.setrecursionlimit(limit)
    return path


def _env(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda ckpt: ckpt["config"]["env"].__setitem__(key, value)


def _top(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda ckpt: ckpt.__setitem__(key, value)


def _model(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda ckpt: ckpt["policy"]["model"].__setitem__(key, value)


# an MLP of 822M parameters, 3.3 GB of float32 (no weights: the spec alone is refused)
_HUGE_SPEC = {
    "obs_dim": 1000,
    "n_actions": 26,
    "model": {"kind": "mlp", "encoder_sizes": [16384] * 4},
}

# name: (builder of the file at a path, a fragment of the one line)
HOSTILE: dict[str, tuple[Callable[[Path], Path], str]] = {
    "stride0_weights": (
        lambda p: stride0(p, [4096, 4096]),
        "every tensor must be contiguous, each element its own bytes",
    ),
    "spec_of_3gb": (
        lambda p: spoiled(p, _top("policy", {**_HUGE_SPEC})),
        "more than the 100000000 allowed",
    ),
    "deflate_bomb": (deflate_bomb, "is compressed (torch.save writes none)"),
    "config_a_string": (lambda p: spoiled(p, _top("config", "x")), "config must be a dict"),
    "plugins_an_int": (
        lambda p: spoiled(p, _env("plugins", 7)),
        "config.env.plugins must be a list",
    ),
    "mask_futile_a_tensor": (
        lambda p: spoiled(p, _top("mask_futile", torch.ones(3))),
        "mask_futile must be true or false, got <tensor",
    ),
    "max_turns_a_string": (
        lambda p: spoiled(p, _env("max_turns", "abc")),
        "config.env.max_turns must be a positive integer or null",
    ),
    "global_step_a_tensor": (
        lambda p: spoiled(p, _top("global_step", torch.zeros(2))),
        "global_step must be a non-negative integer",
    ),
    "hidden_size_nested": (
        lambda p: spoiled(p, _model("hidden_size", nested(10_000))),
        "is nested more than 32 levels deep",
    ),
    "encoder_nested": (
        lambda p: spoiled(p, _top("encoder", nested(10_000, "simple"))),
        "is nested more than 32 levels deep",
    ),
    "long_encoder_sizes": (
        lambda p: spoiled(p, _model("encoder_sizes", [1] * 1_000_000)),
        "policy.model.encoder_sizes must be a list of at most 256",
    ),
    "long_activation": (
        lambda p: spoiled(p, _model("activation", "x" * 5_000_000)),
        "policy.model.activation must be one of",
    ),
    "huge_activation": (
        lambda p: spoiled(p, _model("activation", "x" * 20_000_000)),
        "its pickle is 200",
    ),
}


def build(name: str, directory: Path) -> Path:
    """The hostile file ``name`` written in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    return HOSTILE[name][0](directory / f"{name}.pt")
