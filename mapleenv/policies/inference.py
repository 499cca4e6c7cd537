"""A frozen policy's one-step forward at batch 1, traced: what a policy opponent runs per decision.

Eager PyTorch spends most of a batch-1 step of a small policy in Python dispatch (the
attention policy is ~70 small ops). A TorchScript trace of the step form, frozen, runs the
same ops for about half the CPU (docs/results/benchmarks.md, "Policy opponents"). The trace is
used only where it reproduces the eager outputs on probe inputs (a policy whose step has
data-dependent control flow would not); otherwise the eager network runs.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable

import torch
from torch import nn

from mapleenv.policies.recurrent import Hidden

logger = logging.getLogger(__name__)

StepFn = Callable[
    [torch.Tensor, torch.Tensor, Hidden, torch.Tensor], tuple[torch.Tensor, torch.Tensor, Hidden]
]
TOLERANCE = 1e-5


def batch1_step(network: nn.Module, obs_dim: int, n_actions: int) -> StepFn:
    """``network``'s step form for one env (``obs [1, D]``, ``mask [1, A]``, ``hidden``,
    ``episode_start [1]``), traced and frozen when that gives the eager outputs."""
    network.eval()
    probes = _probes(network, obs_dim, n_actions)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # TracerWarnings: shapes are fixed at batch 1
            traced = torch.jit.freeze(torch.jit.trace(network, probes[0], check_trace=False))
            same = all(_close(traced(*p), network(*p)) for p in probes)
    except Exception as exc:  # noqa: BLE001 (any trace failure: run eager)
        logger.debug("policy step not traced (%s: %s); running eager", type(exc).__name__, exc)
        return network
    if not same:
        logger.debug("traced policy step differs from eager; running eager")
        return network
    return traced


def _probes(network: nn.Module, obs_dim: int, n_actions: int) -> list[tuple]:
    """Inputs that exercise both a first step (state zeroed) and a later step (state kept),
    with a full and a partial action mask."""
    generator = torch.Generator().manual_seed(0)
    state = network.initial_state(1)
    later = tuple(torch.randn(x.shape, generator=generator) for x in state)
    partial = torch.rand(1, n_actions, generator=generator) < 0.5
    partial[0, 0] = True
    return [
        (torch.rand(1, obs_dim, generator=generator), partial, later, torch.zeros(1)),
        (torch.rand(1, obs_dim, generator=generator), torch.ones(1, n_actions, dtype=torch.bool),
         later, torch.ones(1)),
        (torch.rand(1, obs_dim, generator=generator), partial, state, torch.zeros(1)),
    ]  # fmt: skip


def _close(a: object, b: object) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and torch.allclose(a, b, atol=TOLERANCE, rtol=TOLERANCE)
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    return False
