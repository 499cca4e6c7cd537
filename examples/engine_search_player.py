"""A poke-env Player that searches each decision on the native engine (poke-engine),
guided by a Maple checkpoint's policy, against poke-env's heuristic player on a local
Showdown server (docs/search.md, "From any poke-env Player").

    python examples/engine_search_player.py --battles 4 --time-ms 100
    python examples/engine_search_player.py --checkpoint none     # the engine alone

Needs the engine: ``EXTRAS=engine make setup``.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile

from poke_env.battle.abstract_battle import AbstractBattle
from poke_env.player import BattleOrder, Player, SimpleHeuristicsPlayer

from mapleenv.opponents.engine_search import EngineSearch
from mapleenv.showdown.server import ShowdownServer


class EngineSearchPlayer(Player):
    """Any poke-env Player can do this: its ``choose_move`` asks :class:`EngineSearch`."""

    def __init__(self, search: EngineSearch, **kwargs):
        super().__init__(**kwargs)
        self.search = search

    def choose_move(self, battle: AbstractBattle) -> BattleOrder:
        choice = self.search.choose(battle)
        if choice.searched:  # the worlds it searched, as poke-engine states, and its shares
            best = max(choice.shares, key=choice.shares.get)
            print(f"turn {battle.turn}: {len(choice.states)} worlds, {best} "
                  f"{choice.shares[best]:.2f} of the visits -> {choice.order.message}")  # fmt: skip
        return choice.order

    def teampreview(self, battle: AbstractBattle) -> str:
        return "/team 123456"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="models/attention_ppo_gen9random.pt")
    parser.add_argument("--battles", type=int, default=4)
    parser.add_argument("--time-ms", type=float, default=100.0)
    args = parser.parse_args()
    checkpoint = None if args.checkpoint == "none" else args.checkpoint
    with ShowdownServer(log_dir=tempfile.mkdtemp(prefix="engine_search_")) as server:
        config = server.server_configuration
        with EngineSearch(checkpoint, time_ms=args.time_ms) as search:
            player = EngineSearchPlayer(search, battle_format="gen9randombattle",
                                        server_configuration=config)  # fmt: skip
            opponent = SimpleHeuristicsPlayer(battle_format="gen9randombattle",
                                              server_configuration=config)  # fmt: skip
            try:
                await player.battle_against(opponent, n_battles=args.battles)
            finally:  # before the server stops
                for p in (player, opponent):
                    await p.ps_client.stop_listening()
            print(f"won {player.n_won_battles} of {args.battles} against the heuristic player")
            print(search.stats.as_dict())


if __name__ == "__main__":
    asyncio.run(main())
