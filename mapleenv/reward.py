"""Shaped battle rewards with poke-env's ``reward_computing_helper`` semantics.

The value of a state is, from our side::

    sum over our mons:       hp_value * HP fraction - fainted_value * fainted
                             - status_value * (has a status and not fainted)
    + hp_value * (number_of_pokemons - our team size)          (unseen = full HP)
    minus the same sums for the opponent's mons
    + victory_value if won, - victory_value if lost (0 for a tie)

and the reward of a step is the change of that value since the previous step of the
same battle (the first step compares with ``starting_value``).

That is the ``shaped`` reward, the default. Other rewards are chosen by name from
:data:`REWARDS`: modules add theirs with :func:`register_reward`, and
``"package.module:factory"`` names a factory directly (``docs/extending.md``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, Protocol, runtime_checkable

from poke_env.battle.abstract_battle import AbstractBattle

# Accepted spellings of RewardConfig fields (key -> field).
_ALIASES = {"fault_value": "fainted_value", "faint_value": "fainted_value"}


@dataclass(frozen=True)
class RewardConfig:
    """Weights of the shaped reward (defaults: +-1 for a win/loss only)."""

    fainted_value: float = 0.0
    hp_value: float = 0.0
    status_value: float = 0.0
    victory_value: float = 1.0
    number_of_pokemons: int = 6
    starting_value: float = 0.0

    @classmethod
    def from_value(cls, value: RewardConfig | Mapping[str, Any] | None) -> RewardConfig:
        """Coerce ``None`` (defaults), a mapping (``fault_value`` is accepted as an alias
        of ``fainted_value``) or a config; unknown keys raise ``ValueError``."""
        if value is None:
            return cls()
        if isinstance(value, RewardConfig):
            return value
        if not isinstance(value, Mapping):
            raise TypeError(f"reward must be a RewardConfig, a mapping or None, not {value!r}")
        names = {f.name for f in fields(cls)}
        kwargs: dict[str, Any] = {}
        for key, item in value.items():
            name = _ALIASES.get(key, key)
            if name not in names:
                raise ValueError(f"unknown reward key {key!r}; valid: {', '.join(sorted(names))}")
            kwargs[name] = item
        return cls(**kwargs)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def state_value(battle: AbstractBattle, config: RewardConfig) -> float:
    """Value of the battle state under ``config`` (see module docs)."""
    value = 0.0
    for mon in battle.team.values():
        value += mon.current_hp_fraction * config.hp_value
        if mon.fainted:
            value -= config.fainted_value
        elif mon.status is not None:
            value -= config.status_value
    value += (config.number_of_pokemons - len(battle.team)) * config.hp_value
    for mon in battle.opponent_team.values():
        value -= mon.current_hp_fraction * config.hp_value
        if mon.fainted:
            value += config.fainted_value
        elif mon.status is not None:
            value += config.status_value
    value -= (config.number_of_pokemons - len(battle.opponent_team)) * config.hp_value
    if battle.won:
        value += config.victory_value
    elif battle.lost:
        value -= config.victory_value
    return value


class RewardTracker:
    """Per-battle reward: the change of :func:`state_value` since the last call.

    State is keyed by ``battle_tag``: a new battle starts again from
    ``starting_value``.
    """

    def __init__(self, config: RewardConfig | Mapping[str, Any] | None = None):
        self.config = RewardConfig.from_value(config)
        self._battle_tag: str | None = None
        self._last = self.config.starting_value

    def reset(self) -> None:
        self._battle_tag = None
        self._last = self.config.starting_value

    def compute(self, battle: AbstractBattle) -> float:
        if battle.battle_tag != self._battle_tag:
            self._battle_tag = battle.battle_tag
            self._last = self.config.starting_value
        value = state_value(battle, self.config)
        reward, self._last = value - self._last, value
        return reward


@runtime_checkable
class RewardFn(Protocol):
    """A battle's per-step reward: ``reset()`` as an episode starts, then ``compute(battle)``
    after every step (the battle as the agent sees it; the last call sees it finished)."""

    def reset(self) -> None: ...

    def compute(self, battle: AbstractBattle) -> float: ...


RewardFactory = Callable[[RewardConfig], RewardFn]
"""``factory(config) -> RewardFn``; ``config`` holds the env's reward weights (``reward``),
which a custom reward may use or ignore."""

REWARDS: dict[str, RewardFactory] = {"shaped": RewardTracker}


def register_reward(name: str, factory: RewardFactory) -> None:
    """Make ``factory`` available as ``reward_fn=name`` (replaces an existing name)."""
    REWARDS[name] = factory


def make_reward(
    reward_fn: str | RewardFn = "shaped",
    config: RewardConfig | Mapping[str, Any] | None = None,
) -> RewardFn:
    """A reward from a registered name or ``"module:factory"`` (built with ``config``, the
    weights), or a :class:`RewardFn` instance as it is."""
    if not isinstance(reward_fn, str):
        if not isinstance(reward_fn, RewardFn):
            raise TypeError(f"not a RewardFn (reset, compute): {reward_fn!r}")
        return reward_fn
    weights = RewardConfig.from_value(config)
    if reward_fn in REWARDS:
        return REWARDS[reward_fn](weights)
    if ":" in reward_fn:
        module, _, attr = reward_fn.partition(":")
        return getattr(importlib.import_module(module), attr)(weights)
    raise ValueError(
        f"unknown reward_fn {reward_fn!r}; valid: {', '.join(sorted(REWARDS))} "
        "(or 'package.module:factory')"
    )
