"""What a battle's log says that poke-env's battle object does not keep, for the search's
view (:mod:`mapleenv.search.view`): each side's faints as the simulator counts them, and of
an active Pokémon its recharge turn, its forme changed in battle and, for the opponent, the
locks its moves since it switched in imply (choice item, Encore, rampage).

Each reads ``battle._replay_data``, the protocol messages split on ``|``, newest last.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from poke_env.battle.abstract_battle import AbstractBattle
from poke_env.data import to_id_str

# Moves that lock their user in for 2-3 turns, then confuse it (the ``lockedmove`` volatile).
_RAMPAGE = {"outrage", "thrash", "petaldance", "ragingfury"}


def log_faints(battle: AbstractBattle) -> Counter:
    """How many times a Pokémon of each side (``"p1"``, ``"p2"``) fainted (``|faint|``
    messages): the simulator's count, which Revival Blessing does not take back (Last
    Respects reads it)."""
    log = battle._replay_data
    return Counter(m[2][:2] for m in log if len(m) > 2 and m[1] == "faint")


def log_facts(battle: AbstractBattle, role: str, foe: bool) -> dict[str, Any]:
    """What the log says of ``role``'s active Pokémon that poke-env does not keep: whether
    it must recharge this turn and, for the opponent (whose request the seat never sees),
    its locks (:func:`_foe_locks`, :func:`_rampage`); for the seat, its forme."""
    facts: dict[str, Any] = {"must_recharge": _must_recharge(battle, role)}
    if not foe:  # poke-env takes the seat's own species from its requests
        return facts | {"forme": _forme(battle, role)}
    facts |= _foe_locks(_stint_moves(battle, role))
    rampage = _rampage(battle, role)
    if rampage is not None:
        facts["rampage"] = rampage
    return facts


def _forme(battle: AbstractBattle, role: str) -> str | None:
    """The forme ``role``'s active Pokémon took in battle since it switched in (its last
    ``-formechange``: Morpeko-Hangry, Eiscue-Noice; a request names the base forme), or
    None."""
    for message in reversed(battle._replay_data):
        if not _of(message, role):
            continue
        if message[1] == "-formechange":
            return to_id_str(message[3])
        if message[1] in ("switch", "drag"):
            return None
    return None


def _must_recharge(battle: AbstractBattle, role: str) -> bool:
    """Whether ``role``'s active Pokémon must recharge this turn (after Hyper Beam): a
    ``-mustrecharge`` message not yet followed by its ``cant ... recharge`` turn (poke-env
    keeps its flag up through that turn until the Pokémon next moves)."""
    for message in reversed(battle._replay_data):
        if not _of(message, role):
            continue
        if message[1] == "-mustrecharge":
            return True
        if message[1] in ("cant", "move", "switch", "drag"):
            return False
    return False


def _rampage(battle: AbstractBattle, role: str) -> dict[str, Any] | None:
    """The rampage (Outrage, Thrash, Petal Dance, Raging Fury) ``role``'s active Pokémon is
    locked into this turn: the move and how many turns in a row it has used it (the first
    use chosen, the next ``[from] lockedmove``), or None: no rampage last turn, or it ended
    (``-start ... confusion|[fatigue]``) or was stopped."""
    turns, uses, move = 0, 0, None
    for message in reversed(battle._replay_data):
        if message[1:2] == ["turn"]:
            turns += 1
            if turns > uses + 1:  # a turn without the rampage
                return None
            continue
        if not _of(message, role):
            continue
        kind = message[1]
        if kind in ("cant", "switch", "drag") or (
            kind == "-start" and to_id_str(message[3]) == "confusion"
        ):
            return None
        if kind == "move":
            what = to_id_str(message[3])
            if what not in _RAMPAGE or move not in (None, what):
                return None
            move, uses = what, uses + 1
            if _chosen(message):
                return {"move": move, "uses": uses}  # the turn it began
    return None


def _stint_moves(battle: AbstractBattle, role: str) -> list[str]:
    """The moves ``role``'s active Pokémon chose since it last switched in (``|move|``
    messages, oldest first; moves another move or an ability called, ``[from] ...``, and
    Struggle left out): a choice item locks the first, Encore the last."""
    moves: list[str] = []
    for message in reversed(battle._replay_data):
        if not _of(message, role):
            continue
        if message[1] in ("switch", "drag"):
            break
        if _chosen(message):
            moves.append(to_id_str(message[3]))
    return [m for m in reversed(moves) if m != "struggle"]


def _foe_locks(moves: list[str]) -> dict[str, Any]:
    """What the opponent active's moves since it switched in say: the move a choice item
    would lock (one move chosen, maybe repeatedly) and Encore would, or, after two
    different moves, that it holds no choice item."""
    if not moves:
        return {}
    locks: dict[str, Any] = {"last_move": moves[-1]}
    if len(set(moves)) == 1:
        locks["choice_move"] = moves[0]
    else:
        locks["not_choice"] = True
    return locks


def _of(message: list[str], role: str) -> bool:
    """Whether a log message is about ``role``'s active Pokémon (``p2a: ...``)."""
    return len(message) > 2 and message[2].startswith(f"{role}a")


def _chosen(message: list[str]) -> bool:
    """A ``|move|`` its user chose, not one another move or an ability called for it
    (``[from] move: Sleep Talk``, ``[from] lockedmove``, ``[from] ability: Magic Bounce``)."""
    return message[1] == "move" and not any(p.startswith("[from]") for p in message[4:])
