"""Play-quality counts (trainer/evaluation/quality.py) on a hand-written log and recorded ones."""

from __future__ import annotations

import pytest
from conftest import RECORDED_BATTLES, replay_decisions

from mapleenv.replays import protocol_log
from trainer.evaluation.battles import QualityLog
from trainer.evaluation.quality import battle_quality, count_sides, mean_quality

# A battle seen by p1 (exact HP on p1's side). Per turn, what each seat did:
LOG = """\
|player|p1|maple|
|player|p2|them|
|switch|p1a: Clefable|Clefable, L84|300/300
|switch|p2a: Garchomp|Garchomp, L77|100/100
|turn|1
|
|move|p1a: Clefable|Thunder Wave|p2a: Garchomp
|-immune|p2a: Garchomp
|move|p2a: Garchomp|Earthquake|p1a: Clefable
|-damage|p1a: Clefable|200/300
|
|upkeep
|turn|2
|
|switch|p2a: Bronzong|Bronzong, L88|100/100
|move|p1a: Clefable|Moonblast|p2a: Bronzong
|-resisted|p2a: Bronzong
|-damage|p2a: Bronzong|90/100
|
|upkeep
|turn|3
|
|switch|p1a: Heatran|Heatran, L80|250/300
|move|p2a: Bronzong|Earthquake|p1a: Heatran
|-supereffective|p1a: Heatran
|-damage|p1a: Heatran|50/300
|
|upkeep
|turn|4
|
|move|p1a: Heatran|Earth Power|p2a: Bronzong
|-immune|p2a: Bronzong|[from] ability: Levitate
|move|p2a: Bronzong|Stealth Rock||[still]
|-fail|p2a: Bronzong
|
|upkeep
|turn|5
|
|move|p1a: Heatran|Sleep Talk||[still]
|-fail|p1a: Heatran
|move|p2a: Bronzong|Thunder Wave|p1a: Heatran
|-fail|p1a: Heatran|par
|
|-heal|p2a: Bronzong|100/100|[from] item: Leftovers
|upkeep
|turn|6
|
|move|p1a: Heatran|Magma Storm|p2a: Bronzong|[miss]
|-miss|p1a: Heatran|p2a: Bronzong
|move|p2a: Bronzong|Sleep Talk|p2a: Bronzong
|move|p2a: Bronzong|Gyro Ball|p1a: Heatran|[from]Sleep Talk
|-resisted|p1a: Heatran
|-damage|p1a: Heatran|40/300
|
|upkeep
|turn|7
|
|switch|p2a: Vaporeon|Vaporeon, L84|100/100
|switch|p1a: Clefable|Clefable, L84|200/300
|
|upkeep
|turn|8
|
|move|p1a: Clefable|Moonblast|p2a: Vaporeon
|-damage|p2a: Vaporeon|60/100
|move|p2a: Vaporeon|Scald|p1a: Clefable
|-damage|p1a: Clefable|120/300
|
|upkeep
|turn|9
|
|switch|p1a: Heatran|Heatran, L80|40/300
|move|p2a: Vaporeon|Hydro Pump|p1a: Heatran|[miss]
|-miss|p2a: Vaporeon|p1a: Heatran
|
|upkeep
|turn|10
|
|move|p1a: Heatran|Flamethrower|p2a: Vaporeon
|-resisted|p2a: Vaporeon
|-damage|p2a: Vaporeon|50/100
|move|p2a: Vaporeon|Surf|p1a: Heatran
|-supereffective|p1a: Heatran
|-damage|p1a: Heatran|0 fnt
|faint|p1a: Heatran
|
|upkeep
|switch|p1a: Clefable|Clefable, L84|120/300
|turn|11
|
|move|p1a: Clefable|Thunderbolt|p2a: Vaporeon
|-heal|p2a: Vaporeon|75/100|[from] ability: Water Absorb|[of] p1a: Clefable
|move|p2a: Vaporeon|Scald|p1a: Clefable
|-damage|p1a: Clefable|40/300
|
|upkeep
|turn|12""".splitlines()

# p1 moved on turns 1, 2, 4, 5, 6, 8, 10, 11 (8 moves): Thunder Wave into Ground (immune),
# Earth Power into Levitate (immune), Thunderbolt into Water Absorb (immune), Sleep Talk
# awake (failed), Magma Storm (missed). 5 switch-ins (the lead Clefable, Heatran on turn 3,
# Clefable on 7, Heatran on 9, Clefable after the faint on 10): the turn-3 Heatran took a
# super-effective Earthquake that turn; the turn-9 one was missed (its turn-10 hit is a
# later turn).
P1 = {
    "moves": 8,
    "failed": 1,
    "immune": 3,
    "missed": 1,
    "switches": 5,
    "switched_into_super_effective": 1,
}
# p2 moved on turns 1, 3, 4, 5, 6, 8, 9, 10, 11 (9 moves; Gyro Ball was called by Sleep
# Talk): Stealth Rock failed; Thunder Wave failed on the paralysed Heatran (the |-fail| names
# the target, but it follows p2's move); Hydro Pump missed. 3 switch-ins (lead Garchomp,
# Bronzong on turn 2, Vaporeon on 7), none hit super-effectively.
P2 = {
    "moves": 9,
    "failed": 2,
    "immune": 0,
    "missed": 1,
    "switches": 3,
    "switched_into_super_effective": 0,
}


def test_hand_written_log_counts() -> None:
    sides, turns = count_sides(LOG)
    assert turns == 12
    assert sides["p1"].__dict__ == P1
    assert sides["p2"].__dict__ == P2
    mine = battle_quality(LOG, "p2")
    assert mine["agent"] == P2 and mine["opponent"] == P1 and mine["turns"] == 12
    with pytest.raises(ValueError, match="p1 or p2"):
        battle_quality(LOG, "p3")


def test_means_over_battles() -> None:
    one = battle_quality(LOG, "p1")
    empty = battle_quality([], "p1")
    assert empty["agent"]["moves"] == 0 and empty["turns"] == 0
    mean = mean_quality([one, empty])
    assert mean["battles"] == 2 and mean["turns"] == 6.0
    assert mean["agent"]["immune"] == 1.5 and mean["opponent"]["failed"] == 1.0
    assert mean_quality([])["battles"] == 0


@pytest.mark.parametrize("path", RECORDED_BATTLES, ids=lambda p: p.name)
def test_recorded_battles_count_plausibly(path) -> None:
    _, battle = replay_decisions(path, lambda b: None)
    lines = protocol_log(battle)
    quality = battle_quality(lines, battle.player_role)
    assert quality["turns"] == battle.turn
    for seat in ("agent", "opponent"):
        q = quality[seat]
        assert 0 < q["moves"] <= quality["turns"] + 5  # about one action per turn
        assert 0 <= q["failed"] + q["immune"] + q["missed"] <= q["moves"]
        assert q["switches"] >= 1 and q["switched_into_super_effective"] <= q["switches"]


def test_quality_log_counts_the_battles_whose_final_info_carries_their_log() -> None:
    _, battle = replay_decisions(RECORDED_BATTLES[0], lambda b: None)
    lines = protocol_log(battle)
    log = QualityLog()
    assert log.summary() is None
    log({"battle_log": lines, "player_role": battle.player_role, "won": True})
    log({"won": True})  # an env without battle_log: nothing to count
    expected = battle_quality(lines, battle.player_role)
    assert log.battles == [expected]
    assert log.summary() == mean_quality([expected])
