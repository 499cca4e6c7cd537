"""``python -m trainer.play`` with decision-time search: the agent searches its decisions
on a real server and plays its battle to the end."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

import pytest
from test_play import Agent, _random_player, _ready, _results, agent_factory  # noqa: F401


@pytest.mark.integration
@pytest.mark.timeout(420)
def test_a_searching_agent_plays_a_challenger_to_the_end(
    agent_factory: Callable[..., Agent],  # noqa: F811 (the fixture imported above)
) -> None:
    name = f"search{os.getpid()}"[:18]
    agent = agent_factory(
        "mode=accept",
        "battles=1",
        f"username={name}",
        "search.enabled=true",
        "search.time_ms=null",
        "search.sims=20",
        "search.worlds=1",
        "search.opponent=policy",  # the agent's network models its challenger
    )
    port, _ = _ready(agent)
    challenger = _random_player(port, f"chs{os.getpid()}"[:18])
    asyncio.run(asyncio.wait_for(challenger.send_challenges(name.lower(), 1), timeout=300))
    assert agent.finish(timeout=60) == 0, "\n".join(agent.output)
    (battle,) = _results(agent)["battles"]
    assert battle["result"] in ("won", "lost", "tie") and battle["turns"] > 0
    assert not any("search stopped" in line for line in agent.output)
