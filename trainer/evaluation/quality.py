"""Play-quality counts of one battle, read from its protocol log, for both seats.

Blunders are counted, not read by hand: moves that failed (``|-fail|``), moves into an
immunity (``|-immune|``, an absorbing ability, Magic Bounce), moves that missed
(``|-miss|``), and switch-ins that took a super-effective hit the same turn. A line is
charged to the side whose move it follows: a move's consequences run until the next
action (move, switch, ``cant``), the blank line before end-of-turn effects, or the next
turn (``|-fail|p2a: X|par`` after our Thunder Wave is our failure, not theirs). Moves
called by another move (Sleep Talk, Magic Bounce) belong to the move that called them;
``[from]lockedmove`` (Outrage, Petal Dance...) is a move of its own. docs/evaluation.md.

Double battles (``|gametype|doubles``) count the same way, per side: both of a side's
switch-ins of a turn can be hit super-effectively; a spread move counts once, as failed,
immune or missed when any of its targets was; an immunity of the mover's own ally (an
Earthquake beside a Flying ally) is not counted, as it is usually the point.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields

ABSORBING = frozenset(
    {
        "Water Absorb",
        "Volt Absorb",
        "Dry Skin",
        "Flash Fire",
        "Lightning Rod",
        "Storm Drain",
        "Sap Sipper",
        "Motor Drive",
        "Earth Eater",
        "Well-Baked Body",
        "Wind Rider",
        "Magic Bounce",
    }
)
_ENDS_ACTION = frozenset({"", "switch", "drag", "cant", "turn", "upkeep", "win", "tie"})


@dataclass
class SideQuality:
    """One seat's counts over one battle (or their sum over several)."""

    moves: int = 0  # moves used (called moves are part of the move that called them)
    failed: int = 0  # moves followed by |-fail|
    immune: int = 0  # moves into an immunity (|-immune|, absorbing ability, Magic Bounce)
    missed: int = 0  # moves that missed (|-miss|)
    switches: int = 0  # switch-ins (|switch|; not |drag|)
    switched_into_super_effective: int = 0  # switch-ins hit super-effectively that turn

    def add(self, other: SideQuality) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


@dataclass
class _Action:
    side: str
    failed: bool = False
    immune: bool = False
    missed: bool = False


def _turn(text: str) -> int:
    """A turn number from the server (untrusted): ASCII digits, at most 9, else 0
    (``"²"`` is a digit to ``str.isdigit``; a 5,000-digit number would not convert)."""
    return int(text) if text.isascii() and text.isdecimal() and len(text) <= 9 else 0


def _side(ident: str) -> str:
    return ident[:2]


def _mon(ident: str) -> str:
    """``p1a: Name`` -> ``p1: Name`` (the position letter dropped)."""
    side, _, name = ident.partition(": ")
    return f"{side[:2]}: {name}"


class _Counter:
    def __init__(self) -> None:
        self.sides = {"p1": SideQuality(), "p2": SideQuality()}
        self.turns = 0
        self.action: _Action | None = None
        self.fresh: dict[str, set[str]] = {}  # side -> the Pokémon switched in this turn
        self.hit: set[str] = set()  # fresh switch-ins already hit super-effectively
        self.doubles = False  # |gametype|doubles: an ally's immunity is not a blunder

    def close_action(self) -> None:
        a, self.action = self.action, None
        if a is not None and a.side in self.sides:
            q = self.sides[a.side]
            q.failed += a.failed
            q.immune += a.immune
            q.missed += a.missed

    def move(self, args: list[str]) -> None:
        source = next((a for a in args[3:] if a.startswith("[from]")), "")
        called = source and "lockedmove" not in source
        if called and self.action is not None:
            if "Magic Bounce" in source and _side(args[0]) != self.action.side:
                self.action.immune = True
            return
        self.close_action()
        self.action = _Action(_side(args[0]))
        if self.action.side in self.sides:
            self.sides[self.action.side].moves += 1

    def line(self, line: str) -> None:
        parts = line.split("|")
        if len(parts) < 2 or parts[0]:
            return
        kind, args = parts[1], parts[2:]
        if kind == "move" and args:
            self.move(args)
            return
        if kind in _ENDS_ACTION:
            self.close_action()
        if kind == "gametype":
            self.doubles = args[:1] == ["doubles"]
        elif kind == "turn":
            self.turns = max(self.turns, _turn(args[0]) if args else 0)
            self.fresh, self.hit = {}, set()
        elif kind == "switch" and args and _side(args[0]) in self.sides:
            self.sides[_side(args[0])].switches += 1
            self.fresh.setdefault(_side(args[0]), set()).add(_mon(args[0]))
        elif kind == "-supereffective" and args and _side(args[0]) in self.sides:
            mon = _mon(args[0])
            if mon in self.fresh.get(_side(args[0]), ()) and mon not in self.hit:
                self.hit.add(mon)
                self.sides[_side(args[0])].switched_into_super_effective += 1
        elif self.action is not None:
            self.consequence(kind, args)

    def consequence(self, kind: str, args: list[str]) -> None:
        a = self.action
        assert a is not None
        if kind == "-fail":
            a.failed = True
        elif kind == "-immune":
            a.immune = a.immune or not (self.doubles and args and _side(args[0]) == a.side)
        elif kind == "-miss" and args and _side(args[0]) == a.side:
            a.missed = True
        elif args and _side(args[0]) != a.side:
            text = "|".join(args[1:])
            if any(f"ability: {name}" in text for name in ABSORBING):
                a.immune = True


def count_sides(lines: Iterable[str]) -> tuple[dict[str, SideQuality], int]:
    """Counts per side (``p1``, ``p2``) and the number of turns of one battle's log."""
    counter = _Counter()
    for line in lines:
        counter.line(line)
    counter.close_action()
    return counter.sides, counter.turns


def battle_quality(lines: Sequence[str], agent: str) -> dict[str, object]:
    """``{"agent": {...}, "opponent": {...}, "turns": n}`` of one battle, ``agent`` being
    the agent's side id (``p1``/``p2``)."""
    if agent not in ("p1", "p2"):
        raise ValueError(f"agent side must be p1 or p2, got {agent!r}")
    sides, turns = count_sides(lines)
    other = "p2" if agent == "p1" else "p1"
    return {"agent": asdict(sides[agent]), "opponent": asdict(sides[other]), "turns": turns}


def mean_quality(battles: Sequence[dict[str, object]]) -> dict[str, object]:
    """Per-battle means of :func:`battle_quality` results (``battles``: how many)."""
    out: dict[str, object] = {"battles": len(battles)}
    n = max(len(battles), 1)
    for seat in ("agent", "opponent"):
        total = SideQuality()
        for b in battles:
            total.add(SideQuality(**b[seat]))  # type: ignore[arg-type]
        out[seat] = {k: v / n for k, v in asdict(total).items()}
    out["turns"] = sum(int(b["turns"]) for b in battles) / n  # type: ignore[call-overload]
    return out
