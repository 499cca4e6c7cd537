"""Env settings typed once: every schema field named like an ``EnvSpec`` setting is made
from ``EnvSpec`` (its type, its default), not retyped by hand."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from mapleenv.spec import EnvSpec
from trainer.__main__ import CONF_DIR
from trainer.config import (
    Backend,
    EvaluateConfig,
    PlayConfig,
    ShowdownEnvConfig,
    ShowdownVectorization,
)
from trainer.config.schema import OWN_MEANING
from trainer.config.spec_fields import SPEC_FIELD, hydra_type, spec_default, spec_schema

SCHEMAS = (ShowdownEnvConfig, EvaluateConfig, PlayConfig)
SPEC_NAMES = {f.name for f in dataclasses.fields(EnvSpec)}


def retyped(schema: type) -> list[str]:
    """The fields of ``schema`` named like an ``EnvSpec`` setting that do not carry its
    type and default (``Optional`` and ``None`` for a checkpoint-defaulted one)."""
    spec_types = typing.get_type_hints(EnvSpec, vars(__import__("mapleenv.spec").spec))
    found = []
    for f in dataclasses.fields(schema):
        if f.name not in SPEC_NAMES or f.name in OWN_MEANING.get(schema, {}):
            continue
        how = f.metadata.get(SPEC_FIELD)
        kind = Backend if f.name == "backend" else hydra_type(spec_types[f.name])
        default = spec_default(f.name)
        if how == "from_checkpoint":
            kind = Any if kind is Any else typing.Optional[kind]  # noqa: UP045
            default = None
        factory = f.default_factory
        value = factory() if factory is not dataclasses.MISSING else f.default
        same_default = value == default or (isinstance(default, tuple) and value == list(default))
        if how is None or f.type != kind or not same_default:
            found.append(f"{schema.__name__}.{f.name}: {f.type} = {value!r}")
    return found


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s.__name__)
def test_no_env_setting_is_retyped(schema):
    assert retyped(schema) == []


def test_the_comparison_catches_a_retyped_field():
    """A schema that restates an EnvSpec field (own annotation or default) is caught."""

    @dataclass
    class Retyped(ShowdownEnvConfig):
        backend: str | None = None
        plugins: list[str] = field(default_factory=lambda: ["x"])

    @dataclass
    class OwnDefault(spec_schema("Base", ("max_turns",), module=__name__)):
        pass

    assert [r.split(":")[0] for r in retyped(Retyped)] == [
        "Retyped.backend",
        "Retyped.plugins",
    ]
    assert retyped(OwnDefault) == []
    OwnDefault.__dataclass_fields__["max_turns"].default = 100  # a default of its own
    assert retyped(OwnDefault) == ["OwnDefault.max_turns: typing.Optional[int] = 100"]


def test_own_meaning_fields_are_few_and_said():
    """Only fields whose meaning differs from EnvSpec's skip the comparison, each with why."""
    assert {s.__name__: sorted(d) for s, d in OWN_MEANING.items()} == {
        "EvaluateConfig": ["seed"],
        "PlayConfig": ["opponent", "server"],
    }
    assert all(len(why) > 20 for d in OWN_MEANING.values() for why in d.values())


def test_schema_defaults_are_env_spec_defaults():
    """The trainer's env defaults are the env's: one default for ``backend`` ("auto")."""
    cfg, spec = ShowdownEnvConfig(), EnvSpec()
    for name in ("battle_format", "opponent", "encoder", "max_turns", "servers", "sim_hosts"):
        assert getattr(cfg, name) == getattr(spec, name), name
    assert cfg.backend == spec.backend == "auto"
    assert cfg.reward_fn == spec.reward_fn and list(cfg.plugins) == list(spec.plugins)


def test_enum_choices_compose_and_stay_plain_names():
    """``env.backend``/``env.vectorization`` are typed by their enums: a bad value fails at
    composition, a good one reaches EnvSpec as the plain name (workers never import the
    trainer's enum)."""
    from hydra.errors import ConfigCompositionException

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("config", overrides=["env.backend=direct", "env.vectorization=async"])
        for key, valid in (("backend", "auto, direct, server"), ("vectorization", "async, ray")):
            with pytest.raises(ConfigCompositionException) as bad:
                compose("config", overrides=[f"env.{key}=nope"])
            assert f"expected one of [{valid}]" in str(bad.value.__cause__)
    typed = OmegaConf.to_object(cfg)  # the typed config (the value checks start Node)
    assert typed.env.backend is Backend.direct
    assert typed.env.vectorization is ShowdownVectorization("async")
    spec = EnvSpec(backend=typed.env.backend)
    assert type(spec.backend) is str and spec.backend == "direct"
