"""Checks a policy spec and state dict read from a file before the network is rebuilt.

A checkpoint is untrusted data (docs/security.md): its ``policy`` spec (``obs_dim``,
``n_actions``, ``model``) and its ``model`` state dict may be wrong-typed, nonsense or not
match each other. :func:`check_network` turns every such case into one
:class:`CheckpointError` line naming the file and what is wrong, instead of a traceback
from deep inside torch. The network is first built on the ``meta`` device (shapes only, no
memory), so a spec naming a huge network allocates nothing, and the real build that
follows is no larger than the weights the file holds, nor than ``MAPLE_MAX_PARAMETERS``
parameters (:func:`~mapleenv.policies.bounds.max_parameters`). Values are shown with
:func:`~mapleenv.policies.bounds.brief`: no message is huge or recursive.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import torch

from mapleenv.policies.bounds import MAX_PARAMETERS_ENV, brief, max_parameters
from mapleenv.policies.config import ActionHead, Activation, ModelConfig
from mapleenv.policies.files import CheckpointError
from mapleenv.policies.registry import POLICIES, build_policy

MAX_LAYERS = 256  # num_layers, attention_layers, entries of encoder_sizes / head_sizes
_COUNTS = ("num_layers", "attention_layers", "attention_heads")
_ZERO_MEANS_NONE = ("aux_classes", "pair_rank")  # 0: no auxiliary head, no pair term
_DEFAULTS = {
    f.name: f.default_factory() if f.default is dataclasses.MISSING else f.default  # type: ignore[misc]
    for f in dataclasses.fields(ModelConfig)
}


def check_network(snapshot: Mapping[str, Any], source: str) -> None:
    """Raise :class:`CheckpointError` unless ``snapshot`` (read from the file ``source``)
    holds a policy spec that builds a network and weights (``model``) that fill its state
    dict exactly (same keys, same shapes)."""
    spec = snapshot.get("policy") if isinstance(snapshot, Mapping) else None
    if not isinstance(spec, Mapping) or not isinstance(snapshot.get("model"), Mapping):
        raise CheckpointError(
            f"{source} is not a Maple policy checkpoint (needs 'policy' and 'model')"
        )
    missing = [key for key in ("obs_dim", "n_actions", "model") if key not in spec]
    if missing:
        raise CheckpointError(f"{source}: its 'policy' spec lacks {', '.join(missing)}")
    if not isinstance(spec["model"], Mapping):
        raise CheckpointError(f"{source}: policy.model must be a dict of model settings")
    for key in ("obs_dim", "n_actions"):
        _positive(spec.get(key), f"policy.{key}", source)
    model = _checked_model(spec["model"], source)
    try:
        with torch.device("meta"):
            shapes = build_policy(spec["obs_dim"], spec["n_actions"], model).state_dict()
    except Exception as exc:  # the builders' own checks (e.g. attention's layout)
        raise CheckpointError(
            f"{source}: its policy spec does not build a network: {_first_line(exc)[:300]}"
        ) from exc
    count = sum(shape.numel() for shape in shapes.values())
    if count > max_parameters():
        raise CheckpointError(
            f"{source}: its policy spec builds a network of {count} parameters, more than "
            f"the {max_parameters()} allowed ({MAX_PARAMETERS_ENV}=N raises it)"
        )
    _check_state(snapshot["model"], shapes, source)


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def _positive(value: Any, where: str, source: str) -> int:
    if type(value) is not int or value < 1:
        raise CheckpointError(f"{source}: {where} must be a positive integer, got {brief(value)}")
    return value


def _checked_model(model: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The ``model`` settings (missing ones take their defaults) if each has its type and
    a sensible value."""
    unknown = [key for key in model if key not in _DEFAULTS]
    if unknown:
        raise CheckpointError(
            f"{source}: policy.model has unknown setting {brief(unknown[0])}; "
            f"known: {', '.join(_DEFAULTS)}"
        )
    for key, value in model.items():
        where, default = f"policy.model.{key}", _DEFAULTS[key]
        if isinstance(default, list):
            if not isinstance(value, list | tuple) or len(value) > MAX_LAYERS:
                raise CheckpointError(
                    f"{source}: {where} must be a list of at most {MAX_LAYERS} positive "
                    f"integers, got {brief(value)}"
                )
            for size in value:
                _positive(size, where, source)
        elif isinstance(default, int) and not isinstance(default, bool):
            if not (key in _ZERO_MEANS_NONE and type(value) is int and value == 0):
                _positive(value, where, source)
            if key in _COUNTS and value > MAX_LAYERS:
                raise CheckpointError(f"{source}: {where} must be at most {MAX_LAYERS}")
        elif type(value) is not type(default):
            raise CheckpointError(
                f"{source}: {where} must be a {type(default).__name__}, got {brief(value)}"
            )
    choices = {
        "kind": list(POLICIES),
        "activation": [a.value for a in Activation],
        "action_head": [h.value for h in ActionHead],
    }
    for key, valid in choices.items():
        if key in model and model[key] not in valid:
            raise CheckpointError(
                f"{source}: policy.model.{key} must be one of {'|'.join(valid)}, "
                f"got {brief(model[key])}"
            )
    return {key: list(v) if isinstance(v, tuple) else v for key, v in model.items()}


def _check_state(
    state: Mapping[Any, Any], expected: Mapping[str, torch.Tensor], source: str
) -> None:
    """The file's weights must be tensors with exactly the keys and shapes of the network."""
    missing = [key for key in expected if key not in state]
    unexpected = [key for key in state if key not in expected]
    for keys, what in ((missing, "lacks"), (unexpected, "has unexpected")):
        if keys:
            shown = ", ".join(brief(k) for k in keys[:3]) + (", ..." if len(keys) > 3 else "")
            raise CheckpointError(
                f"{source}: its weights ('model') {what} {len(keys)} "
                f"entr{'y' if len(keys) == 1 else 'ies'} of the network its spec builds "
                f"({shown})"
            )
    for key, want in expected.items():
        value = state[key]
        if not torch.is_tensor(value) or not value.is_floating_point():
            raise CheckpointError(
                f"{source}: its weight {key!r} is not a floating-point tensor "
                f"({type(value).__name__})"
            )
        if value.shape != want.shape:
            raise CheckpointError(
                f"{source}: its weight {key!r} has shape {tuple(value.shape)}, the network "
                f"its spec builds needs {tuple(want.shape)}"
            )
