"""The snapshot format: what a frozen policy is rebuilt from, in an env worker or a tool.

A snapshot is a mapping with

* ``policy`` -- the spec: ``obs_dim``, ``n_actions`` and ``model`` (the
  :class:`~mapleenv.policies.config.ModelConfig` fields as plain values);
* ``model`` -- the state dict (torch tensors or NumPy arrays);
* ``encoder`` (optional) -- the encoder name; else ``config.env.encoder``; else ``"simple"``;
* ``id`` (optional) -- an integer naming the snapshot in a self-play pool;
* ``config.env.plugins`` (optional) -- the plugin modules of the run it comes from.

A Maple checkpoint is such a mapping. The network is built only through Maple's own
registry (:data:`mapleenv.policies.POLICIES`, keyed by ``model.kind``): nothing in a
snapshot names code to import (a ``loader`` key of older snapshots is ignored).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mapleenv.policies.registry import build_policy

CHECKPOINT_DIR = "checkpoints"
LAST = "last.pt"


def policy_spec(policy: torch.nn.Module) -> dict[str, Any]:
    """What a checkpoint needs to rebuild ``policy`` without Hydra (plain values only)."""
    return {
        "obs_dim": policy.obs_dim,
        "n_actions": policy.n_actions,
        "model": dataclasses.asdict(policy.cfg),
    }


def make_snapshot(policy: torch.nn.Module, encoder: str, snapshot_id: int) -> dict[str, Any]:
    """A picklable snapshot of ``policy`` (NumPy weights on CPU): what self-play pushes
    through the env workers' pipes."""
    return {
        "id": int(snapshot_id),
        "encoder": encoder,
        "policy": policy_spec(policy),
        "model": {k: v.detach().cpu().numpy().copy() for k, v in policy.state_dict().items()},
    }


def policy_from_snapshot(snapshot: Mapping[str, Any]) -> torch.nn.Module:
    """Rebuild a snapshot's (or a checkpoint's) policy on CPU, in eval mode."""
    spec = snapshot["policy"]
    policy = build_policy(spec["obs_dim"], spec["n_actions"], spec["model"])
    state = {
        k: torch.as_tensor(np.asarray(v)) if not torch.is_tensor(v) else v
        for k, v in snapshot["model"].items()
    }
    policy.load_state_dict(state)
    return policy.cpu().eval()


def read_snapshot(path: str | Path) -> dict[str, Any]:
    """Load a checkpoint file (or a run dir's last one) as a snapshot, on CPU; clear errors
    for a bad path or file."""
    path = Path(path).expanduser()
    if path.is_dir():  # a run dir: its last checkpoint
        path = path / CHECKPOINT_DIR / LAST
    if not path.is_file():
        raise FileNotFoundError(f"policy checkpoint not found: {path}")
    # Maple checkpoints hold RNG states (NumPy objects): the full unpickler is needed.
    snapshot = torch.load(path, map_location="cpu", weights_only=False)
    if not isinstance(snapshot, Mapping) or "model" not in snapshot or "policy" not in snapshot:
        raise ValueError(f"{path} is not a Maple policy checkpoint (needs 'policy' and 'model')")
    return dict(snapshot)


def snapshot_plugins(snapshot: Mapping[str, Any]) -> list[str]:
    """The plugin modules of the run a snapshot comes from (``config.env.plugins``)."""
    env = (snapshot.get("config") or {}).get("env") or {}
    return [str(module) for module in env.get("plugins") or ()]


def snapshot_encoder(snapshot: Mapping[str, Any]) -> str:
    """The encoder name a snapshot's policy was trained with."""
    if snapshot.get("encoder"):
        return str(snapshot["encoder"])
    env = (snapshot.get("config") or {}).get("env") or {}
    return str(env.get("encoder") or "simple")
