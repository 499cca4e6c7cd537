"""Weighted opponent mixes: each battle is played by one opponent drawn by weight.

A mix is written as a mapping ``{random: 0.1, max_power: 0.3, heuristic: 0.3, self: 0.3}``
(Hydra: ``env.opponent``) or as the opponent name ``"mix:random=0.1,max_power=0.3,..."``
(weights need not sum to 1; they are normalised). Members are any opponent names
(:func:`mapleenv.opponents.make_opponent`), e.g. ``self`` (self-play snapshots) or
``policy:<checkpoint>``; names may not contain ``,`` or ``=``.

:class:`OpponentMix` is one poke-env ``Player`` that delegates each battle to the member
drawn for it, with its own RNG (``seed``; the env passes its own seed, so every env of a
vector env draws its own seeded sequence). One draw per battle, at the battle's first
opponent decision or when the env asks :meth:`OpponentMix.name_for` (``info["opponent"]``
at the episode's end), whichever comes first.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from poke_env.battle.abstract_battle import AbstractBattle
from poke_env.player.battle_order import BattleOrder
from poke_env.player.player import Player
from poke_env.ps_client import AccountConfiguration

from mapleenv.opponents import (
    make_opponent,
    opponent_battles,
    register_opponent,
    unique_username,
)

logger = logging.getLogger(__name__)

MIX_PREFIX = "mix:"
SELF = "self"
_MAX_TRACKED_BATTLES = 64


def parse_mix(value: str | Mapping[str, Any]) -> dict[str, float]:
    """``{name: weight}`` from a mapping or ``"[mix:]a=0.5,b=0.5"``; ``ValueError`` if bad."""
    if isinstance(value, str):
        text = value[len(MIX_PREFIX) :] if value.startswith(MIX_PREFIX) else value
        items: list[tuple[str, Any]] = []
        for part in filter(None, (p.strip() for p in text.split(","))):
            name, sep, weight = part.rpartition("=")
            if not sep or not name.strip():
                raise ValueError(
                    f"bad opponent mix entry {part!r} in {value!r}; expected name=weight"
                )
            items.append((name.strip(), weight))
    elif isinstance(value, Mapping):
        items = [(str(k), v) for k, v in value.items()]
    else:
        raise TypeError(f"an opponent mix must be a mapping or a string, not {value!r}")
    weights: dict[str, float] = {}
    for name, weight in items:
        if "," in name or "=" in name:
            raise ValueError(f"opponent name {name!r} in a mix may not contain ',' or '='")
        try:
            weights[name] = float(weight)
        except (TypeError, ValueError):
            raise ValueError(f"weight of {name!r} must be a number, got {weight!r}") from None
        if not np.isfinite(weights[name]) or weights[name] < 0:
            raise ValueError(f"weight of {name!r} must be >= 0, got {weight!r}")
    if not weights or sum(weights.values()) <= 0:
        raise ValueError(f"an opponent mix needs a positive total weight, got {value!r}")
    return weights


def mix_name(weights: Mapping[str, Any]) -> str:
    """The opponent name ``"mix:a=w,..."`` of a mix mapping."""
    parsed = parse_mix(weights)
    return MIX_PREFIX + ",".join(f"{name}={weight:g}" for name, weight in parsed.items())


def opponent_spec(value: str | Mapping[str, Any]) -> str:
    """An opponent name for the env from a name or a mix mapping (Hydra ``env.opponent``)."""
    if isinstance(value, Mapping):
        return mix_name(value)
    if isinstance(value, str):
        return value
    raise TypeError(f"opponent must be a name or a mapping of weights, not {value!r}")


def mix_members(value: str | Mapping[str, Any]) -> list[str]:
    """The names ``info["opponent"]`` can take for ``value`` (mix members, in order)."""
    spec = opponent_spec(value)
    if spec.startswith(MIX_PREFIX):
        return [name for name, weight in parse_mix(spec).items() if weight > 0]
    return [spec]


def uses_self_play(value: str | Mapping[str, Any]) -> bool:
    """Whether ``value`` plays self-play snapshots (``self`` or a mix with ``self``)."""
    return SELF in mix_members(value)


class OpponentMix(Player):
    """Delegates each battle to a member drawn by weight (see module docs).

    Args:
        members: name -> non-listening ``Player``.
        weights: name -> weight (> 0) for the same names.
        seed: seeds the draws (``None``: fresh entropy).
        player_kwargs: poke-env ``Player`` arguments (``battle_format``...).
    """

    def __init__(
        self,
        members: Mapping[str, Player],
        weights: Mapping[str, float],
        *,
        seed: int | None = None,
        **player_kwargs: Any,
    ):
        if set(members) != set(weights):
            raise ValueError(f"members {sorted(members)} and weights {sorted(weights)} differ")
        player_kwargs.setdefault(
            "account_configuration", AccountConfiguration(unique_username("x"), None)
        )
        player_kwargs.setdefault("log_level", logging.WARNING)
        super().__init__(start_listening=False, **player_kwargs)
        self.members = dict(members)
        self.names = list(weights)
        total = float(sum(weights.values()))
        self.probabilities = np.array([weights[n] / total for n in self.names])
        self.name = mix_name(weights)
        self._rng = np.random.default_rng(seed)
        self._drawn: OrderedDict[str, str] = OrderedDict()

    def draw(self) -> str:
        """One draw from the mix (advances the RNG)."""
        return self.names[int(self._rng.choice(len(self.names), p=self.probabilities))]

    def name_for(self, battle_tag: str) -> str:
        """The member playing ``battle_tag`` (drawn on first request)."""
        if battle_tag not in self._drawn:
            self._drawn[battle_tag] = self.draw()
            while len(self._drawn) > _MAX_TRACKED_BATTLES:
                self._drawn.popitem(last=False)
        return self._drawn[battle_tag]

    def policy_id_for(self, battle_tag: str) -> int | None:
        """The pool id of the frozen policy playing ``battle_tag`` if its member has one."""
        member = self.members.get(self.name_for(battle_tag))
        policy_id_for = getattr(member, "policy_id_for", None)
        return policy_id_for(battle_tag) if callable(policy_id_for) else None

    def member_for(self, battle: AbstractBattle) -> Player:
        """The member playing ``battle``; registers the battle with it (as the env does
        with its opponent) and forgets the member's finished battles."""
        member = self.members[self.name_for(battle.battle_tag)]
        battles = opponent_battles(member)
        if battle.battle_tag not in battles:
            for tag in [t for t, b in battles.items() if b.finished]:
                del battles[tag]
            battles[battle.battle_tag] = battle
        return member

    def choose_move(self, battle: AbstractBattle) -> BattleOrder:
        return self.member_for(battle).choose_move(battle)  # type: ignore[return-value]

    def teampreview(self, battle: AbstractBattle) -> Any:
        return self.member_for(battle).teampreview(battle)

    def reset_battles(self) -> None:
        super().reset_battles()
        for member in self.members.values():
            member.reset_battles()

    # -- self-play pool (forwarded to the ``self`` member)
    def _self_member(self) -> Any:
        if SELF not in self.members:
            raise ValueError(f"{self.name} has no '{SELF}' member to push snapshots to")
        return self.members[SELF]

    def sync_pool(
        self,
        add: Sequence[Mapping[str, Any]] = (),
        keep: Sequence[int] | None = None,
        weights: Mapping[int, float] | None = None,
    ) -> list[int]:
        return self._self_member().sync_pool(add, keep, weights)

    def pool_stats(self) -> dict[str, Any]:
        return self._self_member().pool_stats()


def _mix_factory(
    argument: str, *, battle_format: str, seed: int | None = None, **kwargs: Any
) -> OpponentMix:
    weights = {n: w for n, w in parse_mix(argument).items() if w > 0}
    seeds: list[int | None] = [None] * (len(weights) + 1)
    if seed is not None:
        seeds = [
            int(s.generate_state(1)[0])
            for s in np.random.SeedSequence(seed).spawn(len(weights) + 1)
        ]
    members = {
        name: make_opponent(name, battle_format=battle_format, seed=member_seed)
        for name, member_seed in zip(weights, seeds[1:], strict=True)
    }
    return OpponentMix(members, weights, seed=seeds[0], battle_format=battle_format, **kwargs)


register_opponent("mix", _mix_factory)
