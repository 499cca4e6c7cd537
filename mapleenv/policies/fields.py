"""The fields of a checkpoint that Maple reads after loading it, type- and range-checked
once, at load (:func:`fields_problem`), so that no later use (an ``int()``, a JSON dump, a
team path, a plugin hint) can fail on a value a file's author chose. Every field is
optional (a policy-only export holds a few); a present one must have its type. The policy
spec and weights have their own check (:mod:`mapleenv.policies.spec_check`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from mapleenv.policies.bounds import brief

MAX_TEXT = 1 << 20  # a team given inline is at most 1 MiB; names and paths far less
MAX_NAME = 200  # an encoder, a format, a plugin module
MAX_COUNT = 2**62


def _count(value: Any) -> bool:
    return type(value) is int and 0 <= value <= MAX_COUNT


def _seconds(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value) and 0 <= value <= 1e12


def _name(value: Any) -> bool:
    return type(value) is str and len(value) <= MAX_NAME


def _optional(test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or test(value)


def _names(value: Any) -> bool:
    return type(value) in (list, tuple) and len(value) <= 16 and all(map(_name, value))


def _dict(value: Any) -> bool:
    return type(value) is dict


# field: (its test, what it must be)
_TOP: dict[str, tuple[Callable[[Any], bool], str]] = {
    "global_step": (_count, "a non-negative integer"),
    "iteration": (_count, "a non-negative integer"),
    "train_seconds": (_seconds, "a non-negative finite number"),
    "iteration_seconds": (_seconds, "a non-negative finite number"),
    "encoder": (_optional(_name), f"a string of at most {MAX_NAME} characters"),
    "id": (_optional(_count), "a non-negative integer"),
    "mask_futile": (lambda v: type(v) is bool, "true or false"),
    "config": (_optional(_dict), "a dict"),
    "policy": (_dict, "a dict"),
    "model": (_dict, "a dict"),
    "optimizer": (_optional(_dict), "a dict"),
    "rng": (_optional(_dict), "a dict"),
    "selfplay": (_optional(_dict), "a dict"),
    "reward_norm": (_optional(_dict), "a dict"),
}
_ENV: dict[str, tuple[Callable[[Any], bool], str]] = {
    "plugins": (_optional(_names), "a list of at most 16 module names"),
    "encoder": (_optional(_name), f"a string of at most {MAX_NAME} characters"),
    "battle_format": (_optional(_name), f"a string of at most {MAX_NAME} characters"),
    "mask_futile": (_optional(lambda v: type(v) is bool), "true, false or null"),
    "max_turns": (_optional(lambda v: _count(v) and v >= 1), "a positive integer or null"),
    "team": (_optional(lambda v: type(v) is str and len(v) <= MAX_TEXT), "a team or a path"),
    "opponent_team": (
        _optional(lambda v: type(v) is str and len(v) <= MAX_TEXT),
        "a team or a path",
    ),
}


def fields_problem(ckpt: dict[Any, Any]) -> str | None:
    """What is wrong with the first field of ``ckpt`` that does not have its type or range
    (``global_step must be a non-negative integer, got 'x'``), or ``None``."""
    problem = _first_bad(ckpt, _TOP, "")
    if problem:
        return problem
    env = (ckpt.get("config") or {}).get("env")
    if env is not None and not _dict(env):
        return f"config.env must be a dict, got {brief(env)}"
    problem = _first_bad(env or {}, _ENV, "config.env.")
    if problem:
        return problem
    selfplay = ckpt.get("selfplay") or {}
    for key in ("recent", "archive"):
        members = selfplay.get(key, [])
        if type(members) not in (list, tuple) or not all(map(_dict, members)):
            return f"selfplay.{key} must be a list of snapshots, got {brief(members)}"
        for i, member in enumerate(members):
            problem = _first_bad(member, _TOP, f"selfplay.{key}[{i}].")
            if problem:
                return problem
    if "next_id" in selfplay and not _count(selfplay["next_id"]):
        return f"selfplay.next_id must be a non-negative integer, got {brief(selfplay['next_id'])}"
    return None


def _first_bad(
    values: dict[Any, Any], rules: dict[str, tuple[Callable[[Any], bool], str]], prefix: str
) -> str | None:
    for key, (test, what) in rules.items():
        if key in values and not test(values[key]):
            return f"{prefix}{key} must be {what}, got {brief(values[key])}"
    return None
