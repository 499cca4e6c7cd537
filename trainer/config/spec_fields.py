"""Env settings typed once: schema fields made from :class:`mapleenv.spec.EnvSpec`'s own.

A Hydra schema that carries an env setting (``env.battle_format``, evaluate's
``battle_format=``...) takes its name, type and default from ``EnvSpec`` through
:func:`spec_schema` instead of restating them, so the trainer's settings and the env's
cannot drift apart (tests/trainer/config/test_spec_fields.py fails on a retyped field).
OmegaConf holds fewer types than ``EnvSpec`` accepts, so a type is translated once here
(:func:`hydra_type`): abstract mappings and sequences become ``dict``/``list``, a value that
may also be an object (an encoder, a reward function) is ``Any``, a settings dataclass
(``search_teacher``) stays itself, and ``backend`` is the closed choice :class:`Backend`
(the names a config may give).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Any, Optional, Union

from mapleenv.spec import EnvSpec

__all__ = ["SPEC_FIELD", "Backend", "env_spec", "hydra_type", "spec_default", "spec_schema"]

SPEC_FIELD = "env_spec"
"""Metadata key of a schema field made by :func:`spec_schema`: ``"as_spec"`` (EnvSpec's
default) or ``"from_checkpoint"`` (``None``: the checkpoint's setting)."""


class Backend(StrEnum):
    """``backend`` of a config: auto (direct, or server with a server URL), direct or server."""

    auto = "auto"
    direct = "direct"
    server = "server"


ENUMS: dict[str, type[StrEnum]] = {"backend": Backend}
"""EnvSpec settings a config gives as a closed choice (EnvSpec also takes registered names)."""

_PLAIN = (str, int, float, bool)


def hydra_type(annotation: Any) -> Any:
    """``annotation`` (a resolved ``EnvSpec`` type) as a type OmegaConf can hold."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2 and hydra_type(rest[0]) is not Any:
            return Optional[hydra_type(rest[0])]  # noqa: UP045 (OmegaConf's spelling)
        return Any
    if origin in (Mapping, dict) and len(args) == 2:
        return dict[hydra_type(args[0]), hydra_type(args[1])]
    if origin in (Sequence, list, tuple) and args:
        return list[hydra_type(args[0])]
    if dataclasses.is_dataclass(annotation):  # a settings group (search_teacher): typed
        return annotation
    return annotation if annotation in _PLAIN else Any


def _spec_types() -> dict[str, Any]:
    import mapleenv.spec

    return typing.get_type_hints(EnvSpec, vars(mapleenv.spec))


def spec_default(name: str) -> Any:
    """``EnvSpec``'s default of setting ``name`` (a factory's value for mappings)."""
    spec_field = EnvSpec.__dataclass_fields__[name]
    if spec_field.default_factory is not dataclasses.MISSING:
        return spec_field.default_factory()
    return spec_field.default


def _schema_field(name: str, types_: Mapping[str, Any], from_checkpoint: bool) -> tuple:
    enum = ENUMS.get(name)
    kind = hydra_type(types_[name]) if enum is None else enum
    default = None if from_checkpoint else spec_default(name)
    if from_checkpoint:
        kind = Any if kind is Any else Optional[kind]  # noqa: UP045
    elif enum is not None and default is not None:
        default = enum(default)
    meta = {SPEC_FIELD: "from_checkpoint" if from_checkpoint else "as_spec"}
    if dataclasses.is_dataclass(default):  # a settings group: a fresh copy each time
        made = dataclasses.field(
            default_factory=lambda v=default: dataclasses.replace(v), metadata=meta
        )
    elif isinstance(default, list | tuple | dict):
        value = list(default) if not isinstance(default, dict) else dict(default)
        made = dataclasses.field(default_factory=lambda v=value: v.copy(), metadata=meta)
    else:
        made = dataclasses.field(default=default, metadata=meta)
    return name, kind, made


def spec_schema(
    cls_name: str, names: Iterable[str], *, from_checkpoint: Iterable[str] = (), module: str
) -> type:
    """A dataclass of the ``EnvSpec`` settings ``names`` (its types, its defaults) plus
    ``from_checkpoint`` ones typed ``Optional`` with default ``None`` (evaluate and play:
    unset means the checkpoint's setting). A schema inherits it and adds its own fields."""
    types_ = _spec_types()
    made = [_schema_field(name, types_, False) for name in names]
    made += [_schema_field(name, types_, True) for name in from_checkpoint]
    schema = dataclasses.make_dataclass(cls_name, made)
    schema.__module__ = module
    return schema


def env_spec(env: Any, seed: int | None = None, log_dir: Any = None) -> EnvSpec:
    """The ``EnvSpec`` of a Showdown ``env.*`` config, not yet checked: every setting the
    schema and the spec share by name is copied as it is (a new env setting needs no line
    here), ``env.server_url`` is the spec's ``server`` (a mix mapping becomes its ``mix:...``
    name in the spec); illegal actions raise (the policy samples masked actions: one is a bug)."""
    spec_names = {f.name for f in dataclasses.fields(EnvSpec)}
    shared = spec_names & {f.name for f in dataclasses.fields(env)}
    values = {name: getattr(env, name) for name in shared}
    return EnvSpec(
        **values
        | {
            "server": env.server_url,
            "reward": dict(env.reward) if env.reward is not None else None,
            "plugins": list(env.plugins),
            "log_dir": str(log_dir) if log_dir is not None else None,
            "seed": seed,
            "on_illegal": "raise",
        }
    )
