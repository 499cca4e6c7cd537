"""Feeding the simulator's stream output into poke-env battle objects.

The websocket server does two things the direct backend must do itself: it resolves the
``|split|pN`` secret/public line pairs into each player's view (``player_view``, like the
simulator's ``extractChannelMessages``), and it hands each line to poke-env, which routes it
the way ``poke_env.player.Player._handle_battle_message`` does (``feed_lines``).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping

import orjson
from poke_env.battle.abstract_battle import AbstractBattle
from poke_env.player.player import Player

logger = logging.getLogger(__name__)

_IGNORED = Player.MESSAGES_TO_IGNORE


def player_view(update: str, side: str) -> list[str]:
    """Lines of a simulator ``update`` message as player ``side`` ("p1"/"p2") sees them."""
    lines = update.split("\n")
    view: list[str] = []
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        if line.startswith("|split|"):
            secret = lines[i + 1] if i + 1 < n else ""
            public = lines[i + 2] if i + 2 < n else ""
            chosen = secret if line[7:] == side else public
            if chosen:
                view.append(chosen)
            i += 3
        else:
            if line:
                view.append(line)
            i += 1
    return view


def feed_lines(battle: AbstractBattle, lines: Iterable[str]) -> list[str]:
    """Apply battle-log lines to ``battle`` as poke-env's Player does; return error texts."""
    errors: list[str] = []
    for line in lines:
        split_message = line.split("|")
        if len(split_message) == 1:
            continue
        kind = split_message[1]
        if kind == "":
            battle.parse_message(split_message)
        elif kind in _IGNORED:
            continue
        elif kind == "win":
            battle.won_by(split_message[2])
        elif kind == "tie":
            battle.tied()
        elif kind == "error":
            errors.append("|".join(split_message[2:]))
        elif kind == "bigerror":
            logger.warning("bigerror in %s: %s", battle.battle_tag, line)
        elif kind == "request":
            apply_request(battle, split_message[2])
        else:
            battle.parse_message(split_message)
    return errors


def absorb(
    battles: Mapping[str, AbstractBattle],
    replies: Iterable[tuple[str, str]],
    requests_only: Collection[str] = (),
) -> tuple[list[str], list[tuple[str, str]]]:
    """Apply simulator messages to each side's battle: every log first, requests last.

    A side in ``requests_only`` gets its requests, errors, the format and the battle's
    end (:func:`_request_player_lines`) but not the rest of the battle log: for a player
    that reads only what the requests set (``valid_orders``), parsing its view of the log
    would be wasted work.
    Returns the sides that received a request (in order) and the ``(side, text)`` of
    ``|error|`` lines sent to a side (rejected choices).
    """
    requests: list[tuple[str, str]] = []
    errors: list[tuple[str, str]] = []
    for kind, data in replies:
        if kind == "update":
            for side, battle in battles.items():
                if side in requests_only:
                    lines = _request_player_lines(data)
                else:
                    lines = player_view(data, side)
                for error in feed_lines(battle, lines):
                    logger.warning("%s %s: %s", battle.battle_tag, side, error)
        elif kind == "sideupdate":
            side, _, body = data.partition("\n")
            if body.startswith("|request|"):
                requests.append((side, body[9:]))
            elif body.startswith("|error|"):
                errors.append((side, body[7:]))
            elif side in battles:
                feed_lines(battles[side], body.split("\n"))
    for side, payload in requests:
        if side in battles:
            apply_request(battles[side], payload)
    return [side for side, _ in requests], errors


def _request_player_lines(update: str) -> list[str]:
    """The lines of an update a requests-only side still gets: the format (``|tier|``,
    read by poke-env's team preview) and the battle's end (``|win|``, ``|tie``); all are
    public lines, never split."""
    if "|win|" not in update and "|tie" not in update:
        return []
    return [
        line
        for line in update.split("\n")
        if line.startswith(("|win|", "|tier|")) or line == "|tie"
    ]


def apply_request(battle: AbstractBattle, request_json: str) -> None:
    """Parse a ``|request|`` payload into ``battle`` (empty or ``null`` payloads are skipped)."""
    if request_json and request_json != "null":
        battle.parse_request(orjson.loads(request_json))
