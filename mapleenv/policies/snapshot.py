"""The snapshot format: what a frozen policy is rebuilt from, in an env worker or a tool.

A snapshot is a mapping with

* ``policy`` -- the spec: ``obs_dim``, ``n_actions`` and ``model`` (the
  :class:`~mapleenv.policies.config.ModelConfig` fields as plain values);
* ``model`` -- the state dict (torch tensors or NumPy arrays);
* ``encoder`` (optional) -- the encoder name; else ``config.env.encoder``; else ``"singles_basic"``;
* ``id`` (optional) -- an integer naming the snapshot in a self-play pool;
* ``mask_futile`` (optional) -- the policy plays without the moves that surely fail, as
  its run's env did; else ``config.env.mask_futile``; else off;
* ``config.env.plugins`` (optional) -- the plugin modules of the run it comes from (only
  named in messages: Maple never imports them on a snapshot's word).

A Maple checkpoint is such a mapping, read by :func:`read_snapshot` through the one safe
loader (:mod:`mapleenv.policies.checkpoint`). The network is built only through Maple's own
registry (:data:`mapleenv.policies.POLICIES`, keyed by ``model.kind``): nothing in a
snapshot names code to import (a ``loader`` key of older snapshots is ignored), and the
encoder a file names must be registered here already (:func:`checked_encoder`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mapleenv.encoders import make_encoder
from mapleenv.plugins import imported_plugins
from mapleenv.policies.bounds import brief
from mapleenv.policies.checkpoint import load_checkpoint
from mapleenv.policies.config import ActionHead
from mapleenv.policies.files import CheckpointError, resolve_checkpoint
from mapleenv.policies.pair_head import doubles_slots
from mapleenv.policies.registry import build_policy
from mapleenv.policies.spec_check import check_network


def policy_spec(policy: torch.nn.Module) -> dict[str, Any]:
    """What a checkpoint needs to rebuild ``policy`` without Hydra (plain values only).
    ``aux_classes`` is stored only for a policy that has the auxiliary head, and the action
    head (resolved: ``flat`` or ``pair``, with ``pair_rank``) only on a doubles-sized action
    space or with the pair head: the spec of every singles policy is the same as before
    these settings existed (older checkpoints resume, older Maple reads new ones)."""
    model = dataclasses.asdict(policy.cfg)
    if not model.get("aux_classes"):
        model.pop("aux_classes", None)
    head = getattr(policy, "action_head", ActionHead.flat.value)
    if head == ActionHead.pair or doubles_slots(policy.n_actions):
        model["action_head"] = str(head)
        if head != ActionHead.pair:
            model.pop("pair_rank", None)
    else:
        model.pop("action_head", None)
        model.pop("pair_rank", None)
    return {"obs_dim": policy.obs_dim, "n_actions": policy.n_actions, "model": model}


def make_snapshot(
    policy: torch.nn.Module, encoder: str, snapshot_id: int, mask_futile: bool = False
) -> dict[str, Any]:
    """A picklable snapshot of ``policy`` (NumPy weights on CPU): what self-play pushes
    through the env workers' pipes. ``mask_futile`` (the run's ``env.mask_futile``) is
    stored only when on, so other runs' snapshots are as before."""
    snapshot = {
        "id": int(snapshot_id),
        "encoder": encoder,
        "policy": policy_spec(policy),
        "model": {k: v.detach().cpu().numpy().copy() for k, v in policy.state_dict().items()},
    }
    if mask_futile:
        snapshot["mask_futile"] = True
    return snapshot


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
    """Load a checkpoint file (or a run dir's last one) as a snapshot, on CPU, with the safe
    loader; :class:`CheckpointError` (one line) for a file that is not a usable policy
    checkpoint (:func:`checked_snapshot`)."""
    path = resolve_checkpoint(path)
    return checked_snapshot(load_checkpoint(path), str(path))


def checked_snapshot(snapshot: dict[str, Any], source: str) -> dict[str, Any]:
    """``snapshot`` (read from the file ``source``) if it holds a policy spec that builds a
    network its weights fit (:func:`~mapleenv.policies.spec_check.check_network`) and its
    encoder is registered here (:func:`checked_encoder`); else :class:`CheckpointError`."""
    check_network(snapshot, source)  # types, values, weights that fit: one line each
    checked_encoder(snapshot, source)
    return snapshot


def snapshot_plugins(snapshot: Mapping[str, Any]) -> list[str]:
    """The plugin modules of the run a snapshot comes from (``config.env.plugins``): for
    messages only, never imported."""
    env = (snapshot.get("config") or {}).get("env") or {}
    return [str(module) for module in env.get("plugins") or ()]


def snapshot_encoder(snapshot: Mapping[str, Any]) -> str:
    """The encoder name a snapshot's policy was trained with."""
    if snapshot.get("encoder"):
        return str(snapshot["encoder"])
    env = (snapshot.get("config") or {}).get("env") or {}
    return str(env.get("encoder") or "singles_basic")


def snapshot_mask_futile(snapshot: Mapping[str, Any]) -> bool:
    """Whether a snapshot's policy was trained without the moves that surely fail: its
    ``mask_futile``, else its run's ``config.env.mask_futile``, else ``False``."""
    if "mask_futile" in snapshot:
        return bool(snapshot["mask_futile"])
    env = (snapshot.get("config") or {}).get("env") or {}
    return bool(env.get("mask_futile", False))


def checked_encoder(snapshot: Mapping[str, Any], source: str) -> str:
    """The encoder name of a snapshot read from a file (``source`` names it), if using it
    imports nothing the file names: a name registered in this process (Maple's, or a plugin's
    the user imported), or ``module:factory`` whose module the user imported as a plugin.
    Else :class:`CheckpointError` saying which plugins to pass if the user trusts them."""
    name = snapshot_encoder(snapshot)
    module, colon, _ = name.partition(":")
    if colon:
        if module in imported_plugins():
            return name
        reason = f"encoder {brief(name)} names a module to import"
    else:
        try:
            make_encoder(name)
            return name
        except ValueError:
            reason = f"encoder {brief(name)}, which is not registered here"
    plugins = snapshot_plugins(snapshot) or ([module] if colon else [])
    hint = (
        f"if you trust its plugins, name them yourself: plugins=[{','.join(plugins)}] "
        f"(env.plugins in training)"
        if plugins
        else "register it with a plugin you name yourself (plugins=[...])"
    )
    raise CheckpointError(
        f"{source}: its policy uses {reason}; Maple imports no module a checkpoint names: {hint}"
    )
