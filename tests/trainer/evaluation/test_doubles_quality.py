"""Play-quality counts (trainer/evaluation/quality.py) of a double battle's log: two
switch-ins a side per turn, spread moves, an ally's immunity."""

from __future__ import annotations

from trainer.evaluation.quality import count_sides

# A double battle seen by p1. Turn 1: p1 switches both slots; p2's spread Earthquake hits
# Heatran super-effectively and not Corviknight (an immunity: p2's blunder), p2's
# Thunderbolt hits Corviknight super-effectively. Turn 2: p1's spread Earthquake meets its
# own Flying ally's immunity (not counted: the point of the move); p2's spread Rock Slide
# misses one of its two targets (one miss for the move).
LOG = """\
|gametype|doubles
|player|p1|maple|
|player|p2|them|
|switch|p1a: Gengar|Gengar, L80|100/100
|switch|p1b: Pelipper|Pelipper, L84|100/100
|switch|p2a: Garchomp|Garchomp, L77|100/100
|switch|p2b: Lanturn|Lanturn, L88|100/100
|turn|1
|
|switch|p1a: Heatran|Heatran, L80|300/300
|switch|p1b: Corviknight|Corviknight, L82|250/250
|move|p2a: Garchomp|Earthquake|p1a: Heatran|[spread] p1a,p2b
|-supereffective|p1a: Heatran
|-damage|p1a: Heatran|50/300
|-damage|p2b: Lanturn|80/100
|-immune|p1b: Corviknight
|move|p2b: Lanturn|Thunderbolt|p1b: Corviknight
|-supereffective|p1b: Corviknight
|-damage|p1b: Corviknight|100/250
|
|upkeep
|turn|2
|
|move|p1a: Heatran|Earthquake|p2a: Garchomp|[spread] p2a,p2b
|-immune|p1b: Corviknight
|-damage|p2a: Garchomp|30/100
|-damage|p2b: Lanturn|40/100
|move|p1b: Corviknight|Iron Head|p2a: Garchomp
|-damage|p2a: Garchomp|10/100
|move|p2a: Garchomp|Rock Slide|p1a: Heatran|[spread] p1b
|-miss|p2a: Garchomp|p1a: Heatran
|-damage|p1b: Corviknight|80/250
|
|upkeep
|turn|3
"""


def test_doubles_log_counts_per_side() -> None:
    sides, turns = count_sides(LOG.splitlines())
    ours, theirs = sides["p1"], sides["p2"]
    assert turns == 3
    # both of p1's turn-1 switch-ins were hit super-effectively (one a side was kept before)
    assert ours.switches == 4 and ours.switched_into_super_effective == 2
    # p1's Earthquake beside its Flying ally: no immunity counted
    assert (ours.moves, ours.immune, ours.failed, ours.missed) == (2, 0, 0, 0)
    # p2's Earthquake into p1's Corviknight: an immunity; Rock Slide missed one target
    assert (theirs.moves, theirs.immune, theirs.failed, theirs.missed) == (3, 1, 0, 1)


def test_without_gametype_an_own_side_immunity_still_counts() -> None:
    """Singles logs count as before: every ``|-immune|`` after a move is the mover's."""
    singles = [line for line in LOG.splitlines() if not line.startswith("|gametype|")]
    sides, _ = count_sides(singles)
    assert sides["p1"].immune == 1 and sides["p2"].immune == 1
