"""The checkpoint file format (2): plain data only, and the one loader that reads it.

A Maple checkpoint is a ``torch.save`` of a dict holding nothing but tensors and plain
containers (dict, list, tuple, str, int, float, bool, None), so
``torch.load(path, weights_only=True)`` reads it and no code named in the file can run.
:func:`to_plain` is what writers pass their payload through (NumPy arrays become tensors,
NumPy scalars and enums plain values; anything else is refused); :func:`load_checkpoint`
is the only reader (the trainer's ``trainer.checkpoint.load_checkpoint`` is this one).
A file it refuses (an older pickled checkpoint, a pickle naming code, a truncated or
foreign file) raises :class:`CheckpointError`: one line naming the file and why.
Format and trust model: docs/training.md, docs/security.md.
"""

from __future__ import annotations

import enum
import pickle
import warnings
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mapleenv.policies.bounds import archive_problem, brief, contents_problem
from mapleenv.policies.fields import fields_problem
from mapleenv.policies.files import CONVERT, FORMAT_VERSION, CheckpointError, resolve_checkpoint


def load_checkpoint(path: str | Path, map_location: Any = "cpu") -> dict[str, Any]:
    """Read a format-2 checkpoint (a file or a run dir) with ``weights_only=True``.

    The zip's records are checked before it is read, its tensors and the fields Maple
    reads later after (:mod:`mapleenv.policies.bounds`, :mod:`mapleenv.policies.fields`):
    the memory it takes is bounded by its size. Raises :class:`CheckpointError` for a file
    it does not accept, ``FileNotFoundError`` for a missing one."""
    path = resolve_checkpoint(path)
    if not zipfile.is_zipfile(path):  # the legacy format would allocate what it declares
        raise CheckpointError(_unreadable(path, "not a file written by torch.save"))
    problem = archive_problem(path)
    if problem:
        raise CheckpointError(f"{path} is refused: {problem}")
    try:
        with warnings.catch_warnings():  # torch's pickle-protocol notes: the error says it
            warnings.simplefilter("ignore")
            ckpt = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:
        raise CheckpointError(_refusal(path)) from exc
    except Exception as exc:  # an untrusted file may fail in any way: one line all the same
        raise CheckpointError(_unreadable(path, exc)) from exc
    if not isinstance(ckpt, dict) or "format_version" not in ckpt:
        raise CheckpointError(
            f"{path} is not a Maple checkpoint (no format_version; Maple writes format "
            f"{FORMAT_VERSION})"
        )
    version = ckpt["format_version"]
    if version == 1:
        raise CheckpointError(
            f"{path} is an older Maple checkpoint (format 1); this Maple reads format "
            f"{FORMAT_VERSION}: convert it with {CONVERT} {path} <new.pt>"
        )
    if version != FORMAT_VERSION:
        raise CheckpointError(
            f"{path} has checkpoint format {brief(version)}; this Maple reads format "
            f"{FORMAT_VERSION}"
        )
    problem = contents_problem(ckpt)
    if problem:
        raise CheckpointError(f"{path} is refused: {problem}")
    problem = fields_problem(ckpt)
    if problem:
        raise CheckpointError(f"{path}: {problem}")
    return ckpt


def _unreadable(path: Path, reason: BaseException | str) -> str:
    if isinstance(reason, BaseException):  # torch's first sentence, or the error's name
        lines = [line.strip() for line in str(reason).splitlines() if line.strip()]
        reason = lines[0].split(". ")[0][:300] if lines else type(reason).__name__
    return f"cannot read checkpoint {path} (truncated or not a Maple checkpoint): {reason}"


def _refusal(path: Path) -> str:
    """Why the restricted unpickler refused ``path``, read from the pickle's opcodes
    (``get_unsafe_globals_in_checkpoint`` lists the code it names without running it)."""
    try:
        names = torch.serialization.get_unsafe_globals_in_checkpoint(path)
    except Exception:  # not a torch.save zip file: garbage, a bare pickle...
        return _unreadable(path, "not a file written by torch.save")
    if names and all(name.startswith("numpy.") for name in names):
        return (
            f"{path} is an older Maple checkpoint (format 1, pickled NumPy objects) or not "
            f"a Maple checkpoint; Maple reads only format {FORMAT_VERSION}, which holds no "
            f"code. If you trust the file, convert it: {CONVERT} {path} <new.pt>"
        )
    shown = ", ".join(name[:100] for name in names[:3]) + (", ..." if len(names) > 3 else "")
    return (
        f"{path} is not a Maple checkpoint: loading it would run code it names ({shown}); "
        "Maple never runs code from a checkpoint (docs/security.md)"
    )


_SCALARS = (bool, int, float, str)


def to_plain(value: Any, where: str = "checkpoint") -> Any:
    """``value`` as format-2 data: tensors (detached; a view copied into a storage of its
    own) and plain containers and scalars.

    NumPy arrays become tensors (unsigned integers wider than 8 bits as int64), NumPy
    scalars and enums their plain values, mappings dicts, tuples tuples. Anything else is
    a ``TypeError`` naming where it sits (``where`` is the path so far)."""
    if isinstance(value, torch.Tensor):
        value = value.detach()
        if (
            value.storage_offset()
            or not value.is_contiguous()
            or (value.untyped_storage().nbytes() != value.numel() * value.element_size())
        ):  # a view (cuDNN's flat LSTM weights...): its own storage, as the loader prefers
            value = value.clone(memory_format=torch.contiguous_format)
        return value
    if value is None:
        return None
    if isinstance(value, enum.Enum):
        return to_plain(value.value, where)
    if isinstance(value, np.ndarray):
        return _array_to_tensor(value, where)
    if isinstance(value, np.generic):
        return to_plain(value.item(), where)
    for kind in _SCALARS:  # exact built-in types (a subclass would be pickled by name)
        if isinstance(value, kind):
            return kind(value)
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            key = to_plain(key, f"{where} key")
            if not isinstance(key, _SCALARS):
                raise TypeError(f"{where}: key {key!r} is not a string or number")
            out[key] = to_plain(item, f"{where}[{key!r}]")
        return out
    if isinstance(value, list | tuple):
        items = [to_plain(item, f"{where}[{i}]") for i, item in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)
    raise TypeError(
        f"{where} is a {type(value).__name__}: a checkpoint holds only tensors, NumPy "
        "arrays and plain values"
    )


def _array_to_tensor(array: np.ndarray, where: str) -> torch.Tensor:
    if array.dtype.kind == "u" and array.dtype.itemsize > 1:
        array = array.astype(np.int64)
    elif array.dtype.kind not in "biuf":
        raise TypeError(f"{where} is a NumPy array of {array.dtype}: not storable")
    return torch.from_numpy(np.array(array, copy=True))
