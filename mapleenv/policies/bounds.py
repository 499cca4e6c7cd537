"""Bounds on what a checkpoint may cost before Maple allocates anything for it.

A checkpoint is untrusted data (docs/security.md). A small file can still ask for a lot of
memory: a record deflate-compressed inside the zip expands inside ``torch.load``; a tensor
whose 4-byte storage is stretched to a full shape (stride 0) passes a shape check and then
fills a network as large as its spec names. So, like safetensors, the file's zip entries
are checked before it is read (:func:`archive_problem`: stored records only, together no
larger than the file), and every tensor after (:func:`contents_problem`: contiguous, no two
overlapping on a storage, nesting bounded), which bounds the memory of the loaded file by
its size. The network a spec builds is bounded by
:func:`max_parameters` (``MAPLE_MAX_PARAMETERS``). :func:`brief` is the bounded ``repr``
every message about a checkpoint's values uses: no value makes a message huge or recursive.
"""

from __future__ import annotations

import os
import reprlib
import zipfile
from pathlib import Path
from typing import Any

import torch

MAX_PARAMETERS_ENV = "MAPLE_MAX_PARAMETERS"
DEFAULT_MAX_PARAMETERS = 100_000_000  # 400 MB of float32: ~100x the shipped agent
MAX_DEPTH = 32  # nesting of containers in a checkpoint (Maple's own: 8 at most)
# the pickle (structure, config, names; not the tensors' bytes): the shipped agent's is
# 28 KB. Unpickled objects can take ~40x their opcodes' bytes: this bounds them too
MAX_PICKLE = 8 << 20


def max_parameters() -> int:
    """The most parameters a network rebuilt from a file may have: ``MAPLE_MAX_PARAMETERS``
    (an environment variable, so env workers see it too), else 100 million."""
    value = os.environ.get(MAX_PARAMETERS_ENV, "").strip()
    try:
        return int(value) if value else DEFAULT_MAX_PARAMETERS
    except ValueError:
        return DEFAULT_MAX_PARAMETERS


class _Brief(reprlib.Repr):
    """``reprlib`` with short strings and no conversion of huge integers to text."""

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 128:
            return f"<an integer of {x.bit_length()} bits>"
        return repr(x)

    def repr_str(self, x: str, level: int) -> str:
        if len(x) <= self.maxstring:
            return repr(x)
        return f"{x[: self.maxstring]!r}... ({len(x)} characters)"

    def repr_Tensor(self, x: torch.Tensor, level: int) -> str:  # noqa: N802 (reprlib's names)
        return f"<tensor {x.dtype} {tuple(x.shape)}>"


_BRIEF = _Brief()
_BRIEF.maxlevel, _BRIEF.maxstring, _BRIEF.maxother = 3, 60, 60
_BRIEF.maxlist = _BRIEF.maxtuple = _BRIEF.maxdict = _BRIEF.maxset = 6


def brief(value: Any) -> str:
    """A ``repr`` of ``value`` of at most a few hundred characters, whatever its size or
    depth (3 levels, 6 items, 60 characters of a string)."""
    try:
        return _BRIEF.repr(value)[:400]
    except Exception:  # a value whose own repr fails: its type says enough
        return f"<{type(value).__name__}>"


def archive_problem(path: Path) -> str | None:
    """Why the zip file ``path`` (a ``torch.save`` file) could expand past its size, or
    ``None``: every record must be stored (``torch.save`` compresses nothing), the records
    together no larger than the file, the pickle at most :data:`MAX_PICKLE` bytes. Not a
    zip file: ``None`` (the loader says why it cannot read it)."""
    try:
        size = path.stat().st_size
        with zipfile.ZipFile(path) as archive:
            entries = archive.infolist()
    except (OSError, zipfile.BadZipFile, ValueError, EOFError):
        return None
    total = 0
    for entry in entries:
        if entry.compress_type != zipfile.ZIP_STORED or entry.compress_size != entry.file_size:
            return (
                f"its record {brief(entry.filename)} is compressed (torch.save writes none): "
                "it could expand to any size while being read"
            )
        total += entry.file_size
        if entry.filename.endswith("/data.pkl") and entry.file_size > MAX_PICKLE:
            return (
                f"its pickle is {entry.file_size} bytes, more than the {MAX_PICKLE} a "
                "checkpoint's structure may take (its tensors are not counted)"
            )
    if total > size:
        return f"its records claim {total} bytes, more than the file's {size}"
    return None


def contents_problem(value: Any) -> str | None:
    """Why the loaded checkpoint ``value`` could cost more memory than its file, or
    ``None``: containers nested at most :data:`MAX_DEPTH` deep; every tensor dense and
    contiguous, and no two tensors (or two uses of one) overlapping on a storage (no
    stride-0 view, no storage stretched into many weights): each element of a tensor is a
    byte of the file. (Maple writes each tensor at offset 0 of a storage of its own; the
    views of cuDNN's flat LSTM weights, in files of older GPU runs, do not overlap.)"""
    spans: dict[int, list[tuple[int, int, str]]] = {}
    stack: list[tuple[Any, int, str]] = [(value, 0, "checkpoint")]
    while stack:
        item, depth, where = stack.pop()
        if torch.is_tensor(item):
            problem = _tensor_problem(item, where, spans)
            if problem:
                return f"{where} {problem}"
        elif isinstance(item, dict | list | tuple):
            if depth >= MAX_DEPTH:
                return f"{where} is nested more than {MAX_DEPTH} levels deep"
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in pairs:
                if torch.is_tensor(child) or isinstance(child, dict | list | tuple):
                    stack.append((child, depth + 1, f"{where}[{brief(key)}]"[:300]))
    for found in spans.values():
        found.sort()
        for (_, end, first), (start, _, second) in zip(found, found[1:], strict=False):
            if start < end:
                return f"{second} overlaps {first} on one storage: a storage used twice"
    return None


def _tensor_problem(
    tensor: torch.Tensor, where: str, spans: dict[int, list[tuple[int, int, str]]]
) -> str | None:
    if tensor.layout != torch.strided or tensor.is_quantized or tensor.is_nested:
        return f"is a {tensor.layout} tensor; a checkpoint holds dense tensors only"
    nbytes = tensor.numel() * tensor.element_size()
    storage = tensor.untyped_storage()
    start = tensor.storage_offset() * tensor.element_size()
    if not tensor.is_contiguous() or start + nbytes > storage.nbytes():
        return (
            f"is a view (shape {tuple(tensor.shape)}, strides {tuple(tensor.stride())}, "
            f"offset {tensor.storage_offset()}) of a storage of {storage.nbytes()} bytes: "
            "every tensor must be contiguous, each element its own bytes"
        )
    if nbytes:
        spans.setdefault(storage.data_ptr(), []).append((start, start + nbytes, where))
    return None
