"""What the opponent did since the agent's last decision, read from the battle's protocol log.

The optional ``opponent_action`` observation key (``EnvSpec.opponent_action_target``) is the
target of the trainer's auxiliary head (docs/training.md, "Auxiliary opponent-action head").
Its classes (:data:`CLASSES`):

- ``0`` damaging move: the opponent used a physical or special move (a U-turn-style pivot
  counts as its move; a locked-in Outrage too);
- ``1`` status move;
- ``2`` switch: a voluntary switch at the start of the turn (before any move and before
  the end of the turn: not a replacement after a faint, not an Eject Button ejection);
- ``3`` could not act: ``|cant|`` without a move (asleep, frozen, paralysed, flinched,
  recharging); a ``|cant|`` naming the move it chose (Taunt, Disable, no PP) is that
  move's class;
- ``-1`` unknown: no choice of the opponent shows in the log since the last decision
  (the first observation of a battle, a segment with only forced switches, the opponent
  fainted before it moved).

The log is poke-env's ``Battle._replay_data`` (every message the battle parsed), the same
list both backends fill (:mod:`mapleenv.replays` reads it too).
"""

from __future__ import annotations

from collections.abc import Sequence

from poke_env.battle.abstract_battle import AbstractBattle
from poke_env.data import GenData, to_id_str

CLASSES = ("damaging_move", "status_move", "switch", "cannot_act")
UNKNOWN = -1
DAMAGING, STATUS, SWITCH, CANNOT_ACT = range(len(CLASSES))


def move_class(move: str, gen: int) -> int:
    """``DAMAGING`` or ``STATUS`` for a move name (``UNKNOWN`` for a name the dex lacks)."""
    entry = GenData.from_gen(gen).moves.get(to_id_str(move))
    if entry is None:
        return UNKNOWN
    return STATUS if entry.get("category") == "Status" else DAMAGING


def _action(message: Sequence[str], settled: bool, gen: int) -> int | None:
    """The class of one of the opponent's messages, or None if it is not its choice."""
    kind = message[1]
    if kind == "move" and len(message) > 3:
        called = any(p.startswith("[from]") and p != "[from]lockedmove" for p in message[4:])
        return None if called else move_class(message[3], gen)
    if kind == "switch":
        return None if settled else SWITCH
    if kind == "cant":
        return move_class(message[4], gen) if len(message) > 4 and message[4] else CANNOT_ACT
    return None


def opponent_choice(
    log: Sequence[Sequence[str]], start: int, opponent: str, gen: int
) -> tuple[Sequence[str], int] | None:
    """The opponent's (``"p1"``/``"p2"``) first choice among ``log[start:]`` (split protocol
    messages): its message and class, or None. The messages of the same turn before
    ``start`` are read too, to know whether a switch still is a free choice (no move and no
    ``|upkeep|`` yet in the turn)."""
    first = start
    while first > 0 and log[first - 1][1:2] != ["turn"]:
        first -= 1
    settled = False  # a move was used or the turn ended: a later switch is forced
    for i in range(first, len(log)):
        message = log[i]
        kind = message[1] if len(message) > 1 else ""
        if i >= start and len(message) > 2 and message[2].startswith(opponent):
            label = _action(message, settled, gen)
            if label is not None:
                return message, label
        if kind in ("move", "upkeep"):
            settled = True
        elif kind == "turn":
            settled = False
    return None


def opponent_action(log: Sequence[Sequence[str]], start: int, opponent: str, gen: int) -> int:
    """The class of :func:`opponent_choice`, or ``UNKNOWN``."""
    choice = opponent_choice(log, start, opponent, gen)
    return UNKNOWN if choice is None else choice[1]


class OpponentActionReader:
    """Labels each observation of a battle with :func:`opponent_action` of the messages
    parsed since the previous one (a cursor into the log)."""

    def __init__(self) -> None:
        self._cursor = 0

    def reset(self, battle: AbstractBattle) -> int:
        """A battle starts: its first observation is ``UNKNOWN``."""
        self._cursor = len(battle._replay_data)
        return UNKNOWN

    def read(self, battle: AbstractBattle) -> int:
        """The opponent's action since the last call (or :meth:`reset`)."""
        log = battle._replay_data
        start, self._cursor = self._cursor, len(log)
        opponent = "p2" if battle.player_role == "p1" else "p1"
        return opponent_action(log, start, opponent, battle.gen)
