"""Replaying a Showdown input log (seed, players, choices) on the simulator host.

A Showdown server that logs battles (``logchallenges``) stores each battle's
``inputLog``: the ``>start`` line with the PRNG seed, the ``>player`` lines and every
choice. Fed to :class:`SimHost`, it re-plays the identical battle; the output goes through
the direct backend's parser (:func:`mapleenv.backends.direct.protocol.absorb`) into fresh poke-env
battles, one per side. This is how the direct backend is checked against a server battle.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Callable, Iterable

from poke_env.battle.battle import Battle
from poke_env.data import GenData

from mapleenv.backends.direct.host import SimHost
from mapleenv.backends.direct.protocol import absorb

logger = logging.getLogger(__name__)
_replays = itertools.count()


def replay_input_log(
    input_log: Iterable[str],
    host: SimHost,
    on_request: Callable[[str, Battle], None] | None = None,
) -> dict[str, Battle]:
    """Re-play ``input_log`` on ``host``; returns each side's battle ("p1", "p2").

    ``on_request(side, battle)`` is called whenever a side receives a request that asks
    for a decision (not a "wait"), with its battle as poke-env sees it at that moment.
    """
    lines = list(input_log)
    start = next((line for line in lines if line.startswith(">start ")), None)
    if start is None:
        raise ValueError("input log has no >start line")
    battle_format = json.loads(start[len(">start ") :])["formatid"]
    gen = GenData.from_format(battle_format).gen
    names: dict[str, str] = {}
    for line in lines:
        if line.startswith(">player "):
            side, _, options = line[len(">player ") :].partition(" ")
            names[side] = json.loads(options).get("name", side)
    bid = f"replay{next(_replays)}"
    tag = f"battle-{battle_format}-{bid}"
    battles = {side: Battle(tag, name, logger, gen=gen) for side, name in names.items()}
    try:
        for line in lines:
            if not line.startswith(">"):
                continue
            requested, errors = absorb(battles, host.send(bid, [line]))
            for side, error in errors:
                logger.warning("replay %s %s: %s", tag, side, error)
            for side in requested:
                battle = battles[side]
                if (
                    on_request is not None
                    and not battle.finished
                    and not battle.last_request.get("wait")
                ):
                    on_request(side, battle)
    finally:
        host.send(bid, ["destroy"])
    return battles
