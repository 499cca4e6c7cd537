"""The opponent's seat of a battle as poke-env would see it, in one sampled world: the
public log the searching seat has read, replayed into a fresh poke-env battle from the
other side, then that world's request for the opponent (its team as the world drew it).
The agent's encoder and network read it like any battle: search's policy opponent model
(:mod:`mapleenv.search.opponent_model`).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from typing import Any

from poke_env.battle import Battle
from poke_env.data import to_id_str

_LOGGER = logging.getLogger("mapleenv.search.mirror")
# what ends a battle or only the seat itself reads
_SKIPPED = {"win", "tie", "request", "error", "bigerror"}


def _request_for(mirror: Battle, request: dict[str, Any], role: str) -> dict[str, Any]:
    """``request`` (the world's, made for seat p2 with Pokémon named after their species)
    for ``role`` with the log's names: the log calls ``Urshifu-Rapid-Strike`` ``Urshifu``."""
    names = {mon.species: key.partition(": ")[2] for key, mon in mirror.team.items()}
    request = copy.deepcopy(request)
    side = request.get("side") or {}
    side["id"] = role
    for entry in side.get("pokemon") or ():
        species = to_id_str(str(entry.get("details", "")).split(",")[0])
        name = names.get(species) or str(entry.get("ident", "")).partition(": ")[2]
        entry["ident"] = f"{role}: {name}"
    return request


def foe_battle(
    log: Sequence[Sequence[str]], role: str, request: dict[str, Any], gen: int, tag: str = ""
) -> Battle:
    """A poke-env battle of seat ``role`` (the searching seat's opponent) at the current
    decision: every message of ``log`` (the searching seat's, split as poke-env keeps them:
    its own HP reads exact to the opponent, a close estimate of what the opponent sees),
    then ``request``, the opponent's request in a world built from the seat's view."""
    username = next((m[3] for m in log if len(m) > 3 and m[1] == "player" and m[2] == role), role)
    mirror = Battle(tag or "battle-mirror", username, _LOGGER, gen=gen)
    for message in log:
        if len(message) > 1 and message[1] not in _SKIPPED:
            mirror.parse_message(list(message))
    mirror.parse_request(_request_for(mirror, request, role))
    return mirror
