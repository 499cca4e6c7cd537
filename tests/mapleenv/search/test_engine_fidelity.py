"""poke-engine's one turn against Showdown's on real in-simulator battles (both teams known):
the deterministic mechanics agree (move order where priorities differ or the engine sees one
order, a knock-out, hazards and weather after the turn). Real simulator, real engine."""

from __future__ import annotations

import pytest

from mapleenv.search.engine.fidelity import battles, compare
from mapleenv.showdown import find_node

pytestmark = pytest.mark.integration
pe = pytest.importorskip("poke_engine")


def test_engine_agrees_with_showdown_on_deterministic_mechanics() -> None:
    records = list(battles(3, 4, 2, find_node()))
    assert len(records) >= 20
    compared = {"order": 0, "faint": 0, "hazards": 0, "weather": 0}
    agree = dict.fromkeys(compared, 0)
    for record in records:
        result = compare(record)
        if isinstance(result, str):
            continue
        for mechanic in compared:
            for ok, _note in result.get(mechanic, []):
                compared[mechanic] += 1
                agree[mechanic] += ok
    assert all(compared.values()), compared
    assert agree["order"] >= 0.9 * compared["order"], (agree, compared)
    assert agree["faint"] >= 0.85 * compared["faint"], (agree, compared)
    assert agree["hazards"] >= 0.95 * compared["hazards"], (agree, compared)
    assert agree["weather"] >= 0.95 * compared["weather"], (agree, compared)
