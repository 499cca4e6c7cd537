"""One battle run directly on the simulator host, seen through two poke-env ``Battle`` objects.

``DirectBattle`` plays the agent as p1 and a poke-env ``Player`` (the opponent, choosing on
its own p2-view ``Battle``) as p2. It advances the simulator until the agent has a decision
to make or the battle is over. Simulator replies are applied log first, requests last, so a
request never sees a battle state older than the log that preceded it. With no opponent
(``opponent=None``) both sides are chosen by the caller: :meth:`DirectBattle.choose` sends
the choices of the sides that must choose and stops at the next decision of either side.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Mapping
from typing import Any

from poke_env.battle.abstract_battle import AbstractBattle
from poke_env.battle.battle import Battle
from poke_env.battle.double_battle import DoubleBattle
from poke_env.data import GenData
from poke_env.player.baselines import RandomPlayer
from poke_env.player.battle_order import BattleOrder
from poke_env.player.player import Player

from mapleenv.actions import by_slot, teampreview_in_order
from mapleenv.backends.direct.host import SimHost, SimHostError
from mapleenv.backends.direct.protocol import absorb
from mapleenv.showdown.formats import is_doubles_format

logger = logging.getLogger(__name__)

SIDES = ("p1", "p2")

# Opponent types whose choices read only what the requests set in their battle:
# ``RandomPlayer`` picks from ``battle.valid_orders`` (and, at team preview, shuffles
# ``battle.team``). Their battle gets no battle log (``absorb``'s ``requests_only``), which
# saves parsing a second view of every update; the choices stay the same
# (tests/mapleenv/backends/test_direct_opponent_view.py). Exact types: a subclass may read more.
REQUESTS_ONLY_PLAYERS: frozenset[type] = frozenset({RandomPlayer})


def order_to_choice(order: BattleOrder | str, battle: AbstractBattle | None = None) -> str:
    """A poke-env order (``/choose move surf``) as a simulator choice (``move surf``).

    With ``battle``, a switch names its Pokémon's slot in the battle's last request
    (``switch 3``) instead of its name: the simulator matches a name against species too,
    so ``switch Pikachu`` meant a Ditto transformed into Pikachu when that Ditto was active
    ("You can't switch to an active Pokémon", poke-env#880)."""
    if battle is not None and not isinstance(order, str):
        order = by_slot(order, battle)
    message = order if isinstance(order, str) else order.message
    if message.startswith("/choose "):
        return message[8:]
    if message.startswith("/"):
        return message[1:]
    return message or "default"


class DirectBattle:
    """A battle between the agent (p1) and ``opponent`` (p2) on a ``SimHost``.

    ``seed`` seeds the battle's PRNG and ``team_seeds[side]`` the random-team generator of
    that side (random formats); with all three, a battle is reproducible.
    """

    def __init__(
        self,
        host: SimHost,
        battle_id: str,
        battle_format: str,
        opponent: Player | None,
        agent_username: str = "Maple",
        seed: list[int] | None = None,
        team_seeds: dict[str, list[int]] | None = None,
        agent_team: str | None = None,
        opponent_team: str | None = None,
        record: bool = False,
        opponent_username: str | None = None,
    ):
        self.host = host
        self.battle_id = battle_id
        self.battle_format = battle_format
        self.opponent = opponent
        self.seed = seed
        self.team_seeds = dict(team_seeds or {})
        gen = GenData.from_format(battle_format).gen
        self.battle_tag = f"battle-{battle_format}-{battle_id}"
        opponent_username = opponent_username or getattr(opponent, "username", None) or "Opponent"
        if opponent_username == agent_username:
            opponent_username += " 2"
        self.usernames = {"p1": agent_username, "p2": opponent_username}
        kind = DoubleBattle if is_doubles_format(battle_format) else Battle
        self.battles: dict[str, AbstractBattle] = {
            side: kind(self.battle_tag, self.usernames[side], logger, gen=gen) for side in SIDES
        }
        self._teams = {"p1": agent_team, "p2": opponent_team}
        self._needs_choice = {"p1": False, "p2": False}
        # a DoubleBattle's actives come from the log's switches, not from its requests
        light = type(opponent) in REQUESTS_ONLY_PLAYERS and kind is Battle
        self._requests_only = ("p2",) if light else ()
        self.invalid_choices = {"p1": 0, "p2": 0}
        self.record = record
        self.input_log: list[str] = []
        self.output_log: list[tuple[str, str]] = []
        self._ended = False  # the simulator reported the battle's end
        self._destroyed = False  # the host dropped the battle (ended or not)

    @property
    def agent_battle(self) -> AbstractBattle:
        return self.battles["p1"]

    @property
    def opponent_battle(self) -> AbstractBattle:
        """The opponent's (p2) battle; for a requests-only opponent (``REQUESTS_ONLY_PLAYERS``)
        it holds what the requests and the battle's end set, not the log's state."""
        return self.battles["p2"]

    @property
    def finished(self) -> bool:
        return self.agent_battle.finished

    def start(self) -> None:
        """Start the battle and advance to the agent's first decision."""
        options: dict[str, Any] = {"formatid": self.battle_format}
        if self.seed is not None:
            options["seed"] = list(self.seed)
        for side in SIDES:
            player: dict[str, Any] = {"name": self.usernames[side]}
            if self._teams[side] is not None:
                player["team"] = self._teams[side]
            elif side in self.team_seeds:
                player["seed"] = list(self.team_seeds[side])
            options[side] = player
        self._advance([">start " + json.dumps(options, separators=(",", ":"))])

    def step(self, agent_order: BattleOrder | str) -> None:
        """Send the agent's order (and the opponent's, if it must choose) and advance."""
        if self.finished:
            raise RuntimeError(f"{self.battle_tag} is finished")
        if not self._needs_choice["p1"]:
            raise RuntimeError(f"{self.battle_tag}: the agent has no decision to make")
        if self.opponent is None:
            raise RuntimeError(f"{self.battle_tag}: no opponent; choose for both sides")
        lines = [self._choice_line("p1", order_to_choice(agent_order, self.agent_battle))]
        if self._needs_choice["p2"]:
            lines.append(self._choice_line("p2", self._opponent_choice()))
        self._advance(lines)

    @property
    def pending(self) -> list[str]:
        """The sides that have a decision to make now."""
        return [side for side in SIDES if self._needs_choice[side]]

    def choose(self, choices: Mapping[str, BattleOrder | str]) -> None:
        """Send the choice of every side that must choose (entries for other sides are
        ignored) and advance to the next decision of either side (``opponent=None``)."""
        if self.finished:
            raise RuntimeError(f"{self.battle_tag} is finished")
        pending = self.pending
        missing = [side for side in pending if side not in choices]
        if missing:
            raise ValueError(f"{self.battle_tag}: no choice for {', '.join(missing)}")
        self._advance(
            [
                self._choice_line(side, order_to_choice(choices[side], self.battles[side]))
                for side in pending
            ]
        )

    def probe_choice(self, side: str, choice: str) -> str | None:
        """Ask the simulator whether ``choice`` is valid for ``side`` now, without making it.

        Only possible while the other side still has to choose (the choice is sent, then
        undone). Returns the simulator's error text, or ``None`` if it was accepted.
        """
        other = "p2" if side == "p1" else "p1"
        if not (self._needs_choice[side] and self._needs_choice[other]):
            raise RuntimeError("probe_choice needs both sides to have a pending decision")
        replies = self.host.send(self.battle_id, [f">{side} {choice}", f">{side} undo"])
        errors = [
            data.partition("\n")[2]
            for kind, data in replies
            if kind == "sideupdate" and data.startswith(f"{side}\n|error|")
        ]
        requests = [(kind, data) for kind, data in replies if "|request|" in data]
        self._absorb(requests)
        return errors[0][7:] if errors else None

    def forfeit(self) -> None:
        """End the battle now as a loss for the agent."""
        if not self.finished:
            self._advance([">forcelose p1"])

    def close(self) -> None:
        """Drop the battle from the host (the host itself stays up).

        Ended battles are dropped too: the host keeps a finished battle's state until it is
        destroyed (a host grew ~70 MB/min in training before this).
        """
        if not self._destroyed and self.host.alive():
            self._destroyed = True
            try:
                self.host.send(self.battle_id, ["destroy"])
            except SimHostError:
                logger.debug("host gone while dropping %s", self.battle_tag)

    # -- internals -------------------------------------------------------------------

    def _choice_line(self, side: str, choice: str) -> str:
        self._needs_choice[side] = False
        return f">{side} {choice}"

    def _opponent_choice(self) -> str:
        battle = self.opponent_battle
        if battle.teampreview:
            choice = self.opponent.teampreview(battle)
        else:
            choice = self.opponent.choose_move(battle)
        if inspect.isawaitable(choice):
            raise TypeError(
                f"opponent {type(self.opponent).__name__} returned an awaitable; the direct "
                "backend needs a synchronous choose_move"
            )
        return order_to_choice(choice, battle)

    def _advance(self, lines: list[str]) -> None:
        """Send ``lines``; keep feeding opponent-only decisions until the agent must act."""
        while True:
            replies = self.host.send(self.battle_id, lines)
            if self.record:
                self.input_log.extend(lines)
                self.output_log.extend(replies)
            self._absorb(replies)
            if self._needs_choice["p1"] and self.agent_battle.teampreview:
                # not a policy decision: answered here, as the server backend's player does
                preview = order_to_choice(teampreview_in_order(self.agent_battle))
                lines = [self._choice_line("p1", preview)]
                if self._needs_choice["p2"]:  # with no opponent, p2 keeps its order too
                    p2 = self._opponent_choice() if self.opponent is not None else None
                    p2 = p2 or order_to_choice(teampreview_in_order(self.opponent_battle))
                    lines.append(self._choice_line("p2", p2))
                continue
            if self.finished or self._needs_choice["p1"]:
                return
            if self._needs_choice["p2"] and self.opponent is None:
                return  # the caller chooses for p2 too
            if self._needs_choice["p2"]:
                lines = [self._choice_line("p2", self._opponent_choice())]
                continue
            raise SimHostError(
                f"{self.battle_tag}: simulator is waiting but no side has a request "
                f"(last replies: {replies[-3:]!r})"
            )

    def _absorb(self, replies: list[tuple[str, str]]) -> None:
        if any(kind == "end" for kind, _ in replies):
            self._ended = True
        requested, errors = absorb(self.battles, replies, self._requests_only)
        for side in requested:
            battle = self.battles[side]
            self._needs_choice[side] = not battle.finished and not _is_wait(battle)
        for side, error in errors:
            self._on_choice_error(side, error)

    def _on_choice_error(self, side: str, error: str) -> None:
        if error.startswith("[Unavailable choice]"):
            # An updated request follows (a hidden constraint was revealed): choose again.
            logger.info("%s %s: %s", self.battle_tag, side, error)
            return
        self.invalid_choices[side] += 1
        logger.warning("%s %s: %s; sending default", self.battle_tag, side, error)
        self._pending_default(side)

    def _pending_default(self, side: str) -> None:
        replies = self.host.send(self.battle_id, [f">{side} default"])
        self._absorb(replies)


def _is_wait(battle: AbstractBattle) -> bool:
    return bool(battle.last_request.get("wait"))
