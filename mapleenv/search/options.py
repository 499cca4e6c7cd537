"""Search settings written into an opponent's name: ``policy_search:<checkpoint>?engine=
poke-engine&time_ms=100`` searches with those ``search.*`` fields (the rest at their
defaults), so one evaluation can hold opponents that search differently."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any
from urllib.parse import parse_qsl

from mapleenv.search.decide import SearchConfig


def _value(name: str, kind: Any, text: str) -> Any:
    """``text`` as field ``name``'s type (``none`` for an optional one's None)."""
    args = typing.get_args(kind) or (kind,)
    if type(None) in args and text.lower() in ("none", "null"):
        return None
    for wanted in (bool, int, float, str):
        if wanted in args:
            if wanted is bool:
                if text.lower() not in ("true", "false"):
                    raise ValueError(f"search option {name}={text!r}: true or false")
                return text.lower() == "true"
            try:
                return wanted(text)
            except ValueError:
                what = f"search option {name}={text!r} is not a {wanted.__name__}"
                raise ValueError(what) from None
    raise ValueError(f"search option {name} cannot be set in an opponent's name")


def split_search_options(argument: str) -> tuple[str, dict[str, Any]]:
    """``"<checkpoint>?engine=poke-engine&time_ms=100"`` -> the checkpoint and the options
    as :class:`SearchConfig` fields (ValueError, one line, for an unknown or bad one)."""
    path, sep, query = argument.partition("?")
    if not sep:
        return argument, {}
    hints = typing.get_type_hints(SearchConfig)
    fields = {f.name for f in dataclasses.fields(SearchConfig)}
    options = {}
    for name, text in parse_qsl(query, keep_blank_values=True, strict_parsing=True):
        if name not in fields:
            raise ValueError(f"unknown search option {name!r}; valid: {', '.join(sorted(fields))}")
        options[name] = _value(name, hints[name], text)
    return path, options
