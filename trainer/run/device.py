"""Pick the torch device: ``auto`` = cuda, then mps, then cpu."""

from __future__ import annotations

import logging

import torch

log = logging.getLogger(__name__)


def unavailable(name: str) -> str | None:
    """Why ``device=name`` (``cuda[:N]``, ``mps``) cannot run on this machine, or None."""
    kind = name.split(":")[0]
    if kind == "cuda" and not torch.cuda.is_available():
        return f"device={name} requested but CUDA is not available (torch {torch.__version__})"
    if kind == "mps" and not torch.backends.mps.is_available():
        return f"device={name} requested but MPS is not available"
    return None


def resolve_device(name: str = "auto") -> torch.device:
    """A ``torch.device`` for ``auto|cuda[:N]|mps|cpu``; fails clearly if it is unavailable."""
    if name == "auto":
        if torch.cuda.is_available():
            device = torch.device("cuda")
        elif torch.backends.mps.is_available():
            device = torch.device("mps")
        else:
            device = torch.device("cpu")
    else:
        device = torch.device(name)
        problem = unavailable(name)
        if problem:
            raise RuntimeError(problem)
        if device.type not in ("cuda", "mps", "cpu"):
            raise ValueError(f"device must be auto|cuda|mps|cpu, got {name!r}")
    detail = torch.cuda.get_device_name(device) if device.type == "cuda" else ""
    log.info("device: %s%s (requested %s)", device, f" ({detail})" if detail else "", name)
    return device
