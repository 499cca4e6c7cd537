"""The ``server`` backend: battles on a Showdown server; both seats are poke-env players."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import queue
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

from poke_env.battle.abstract_battle import AbstractBattle
from poke_env.battle.battle import Battle
from poke_env.player.battle_order import BattleOrder, ForfeitBattleOrder
from poke_env.player.player import Player
from poke_env.ps_client import AccountConfiguration
from poke_env.ps_client.server_configuration import ServerConfiguration

from mapleenv.actions import by_slot, teampreview_in_order
from mapleenv.backends import BackendSpec, BattleAborted
from mapleenv.bounded import BoundedMessages
from mapleenv.opponents import opponent_battles, unique_username
from mapleenv.replays import record_path
from mapleenv.showdown.package import ShowdownError

logger = logging.getLogger(__name__)

_CLOSED = object()  # event payload: a player's websocket listener ended
DONE_TAGS_KEPT = 32  # finished battles whose late room messages a player still recognizes


class _NoOrder(BattleOrder):
    """Answer to a request that no longer matters (its battle ended): sends nothing."""

    @property
    def message(self) -> str:
        return ""


class ChallengeRefused(ShowdownError):
    """The server refused to start the battle (an unknown format, a format that needs a
    team, ...): retrying cannot help. The message carries the server's own words."""


class _Popup(NamedTuple):
    text: str  # the server's popup, its ``||`` line breaks joined with spaces


class _Event(NamedTuple):
    role: str  # "agent", "rival" or "challenge"
    item: Any  # a Battle, _CLOSED, a _Popup, or the challenge's exception
    reply: asyncio.Future | None = None  # set for a decision: resolve it with the order


class _DrivenPlayer(BoundedMessages, Player):
    """A poke-env Player whose decisions are made by the env's thread; what it keeps of
    a server's messages is bounded (:class:`~mapleenv.bounded.BoundedMessages`).

    Each decision and each finished battle is put on ``events`` (a thread-safe queue
    shared by both players); a decision carries its own future, resolved with
    :meth:`answer` -- so an order can never reach another request.
    """

    def __init__(
        self, role: str, events: queue.SimpleQueue, *, record: bool = False, **kwargs: Any
    ):
        super().__init__(start_listening=False, **kwargs)
        self.bound_messages()
        self.role = role
        self._events = events
        self.frames: list[str] | None = [] if record else None
        self.listener: Any = None
        self.listener_task: asyncio.Task | None = None
        # battles this player is done with, newest last: their rooms' late messages (the
        # room closing, ...) are dropped; poke-env would wait for the battle forever
        self._done_tags: dict[str, None] = {}
        # poke-env only logs popups; a refused challenge must reach the env's thread
        self._handle_client_message = self.ps_client._handle_message
        self.ps_client._handle_message = self._watch_popups  # type: ignore[method-assign]

    async def _watch_popups(self, message: str) -> None:
        if message.startswith("|popup|"):
            text = " ".join(part.strip() for part in message[7:].split("||") if part.strip())
            self._events.put(_Event(self.role, _Popup(text)))
        await self._handle_client_message(message)

    def connect(self) -> None:
        self.listener = asyncio.run_coroutine_threadsafe(self._listen(), self.ps_client.loop)
        self.listener.add_done_callback(lambda _: self._events.put(_Event(self.role, _CLOSED)))

    async def _listen(self) -> None:
        self.listener_task = asyncio.current_task()
        await self.ps_client.listen()

    def choose_move(self, battle: AbstractBattle) -> Any:
        return self._await_order(battle)

    async def _await_order(self, battle: AbstractBattle) -> BattleOrder:
        reply = self.ps_client.loop.create_future()
        self._events.put(_Event(self.role, battle, reply))
        order = await reply
        return by_slot(order, battle) if isinstance(order, BattleOrder) else order

    def answer(self, reply: asyncio.Future, order: BattleOrder | str) -> None:
        """Resolve a decision's future with ``order`` (a team-preview choice is a string;
        thread-safe, once)."""

        def resolve() -> None:
            if not reply.done():
                reply.set_result(order)

        self.ps_client.loop.call_soon_threadsafe(resolve)

    async def teampreview(self, battle: AbstractBattle) -> str:
        """The agent keeps its team order; the opponent's seat asks the env's thread (the
        opponent's own ``teampreview``, as on the direct backend)."""
        if self.role == "agent":
            return teampreview_in_order(battle)
        choice = await self._await_order(battle)
        return choice if isinstance(choice, str) else choice.message

    def _battle_finished_callback(self, battle: AbstractBattle) -> None:
        self._events.put(_Event(self.role, battle))

    def reset_battles(self) -> None:
        """Forget the finished battles (poke-env's reset), remembering their tags."""
        for tag in self._battles:
            self._done_tags[tag] = None
        while len(self._done_tags) > DONE_TAGS_KEPT:
            del self._done_tags[next(iter(self._done_tags))]
        super().reset_battles()

    async def _handle_battle_message(self, split_messages: list[list[str]]) -> None:
        tag = split_messages[0][0][1:]
        if tag in self._done_tags and tag not in self._battles:
            return  # a forgotten battle's room: nothing left to update
        if self.frames is not None:
            self.frames.append("\n".join("|".join(m) for m in split_messages))
        await super()._handle_battle_message(split_messages)


class ShowdownBackend:
    """Battles on a Showdown server: the agent and the opponent's seat are two
    poke-env players on their own event-loop thread; the opponent ``Player`` chooses
    for its seat synchronously.

    Waits are bounded by ``timeout``; a closed connection or a timeout raises
    :class:`BattleAborted` (the env then drops this backend and reconnects).
    """

    def __init__(
        self,
        server_configuration: ServerConfiguration,
        battle_format: str,
        opponent: Player,
        *,
        team: Any = None,
        opponent_team: Any = None,
        timeout: float = 60.0,
        record_dir: str | Path | None = None,
        log_level: int = logging.WARNING,
    ):
        self.server_configuration = server_configuration
        self.battle_format = battle_format
        self.opponent = opponent
        self.timeout = timeout
        self.record_dir = Path(record_dir) if record_dir is not None else None
        self._events: queue.SimpleQueue[_Event] = queue.SimpleQueue()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="maple-env-loop", daemon=True
        )
        self._thread.start()
        common = dict(
            battle_format=battle_format,
            server_configuration=server_configuration,
            max_concurrent_battles=1,
            loop=self._loop,
            log_level=log_level,
        )
        self.agent = _DrivenPlayer(
            "agent",
            self._events,
            record=self.record_dir is not None,
            account_configuration=AccountConfiguration(unique_username("a"), None),
            team=team,
            **common,
        )
        self.rival = _DrivenPlayer(
            "rival",
            self._events,
            account_configuration=AccountConfiguration(unique_username("b"), None),
            team=team if opponent_team is None else opponent_team,
            **common,
        )
        self.battle: Battle | None = None
        self.rival_battle: Battle | None = None
        self._agent_reply: asyncio.Future | None = None  # the agent's pending decision
        self._stale_tags: set[str] = set()  # battles of earlier resets
        self._challenge: Any = None
        self._closed = False
        self.agent.connect()
        self.rival.connect()

    @classmethod
    def from_spec(
        cls,
        spec: BackendSpec,
        server_configuration: ServerConfiguration,
        *,
        opponent: Player,
        team: Any = None,
        opponent_team: Any = None,
    ) -> ShowdownBackend:
        """An env's backend: format, step ``timeout``, ``record_dir`` from its spec."""
        return cls(
            server_configuration,
            spec.battle_format,
            opponent,
            team=team,
            opponent_team=opponent_team,
            timeout=spec.timeout,
            record_dir=spec.record_dir,
        )

    @property
    def connected(self) -> bool:
        return not (self.agent.listener.done() or self.rival.listener.done())

    # -- events
    def _next_event(self, timeout: float | None = None) -> _Event:
        timeout = self.timeout if timeout is None else timeout
        try:
            event = self._events.get(timeout=timeout)
        except queue.Empty:
            raise BattleAborted(
                f"no reply from {self.server_configuration.websocket_url} within {timeout:.0f} s"
            ) from None
        if event.item is _CLOSED:
            raise BattleAborted(f"connection to {self.server_configuration.websocket_url} closed")
        if event.role == "challenge":
            raise BattleAborted(f"challenge failed: {event.item!r}")
        return event

    def _is_stale(self, event: _Event) -> bool:
        """An event of an earlier battle; its decision (if any) is answered with nothing."""
        if event.item.battle_tag not in self._stale_tags:
            return False
        if event.reply is not None:
            (self.agent if event.role == "agent" else self.rival).answer(event.reply, _NoOrder())
        return True

    def _on_rival_event(self, event: _Event, ending: bool = False) -> None:
        """Track the opponent's seat; answer its decisions with the opponent's order
        (with nothing while its battle is being ended)."""
        if self._is_stale(event):
            return
        battle = event.item
        if self.rival_battle is None:
            self.rival_battle = battle
            opponent_battles(self.opponent)[battle.battle_tag] = battle
        if event.reply is None:
            return
        if ending or battle.finished:
            self.rival.answer(event.reply, _NoOrder())
            return
        if battle.teampreview:
            order = self.opponent.teampreview(battle)
        else:
            order = self.opponent.choose_move(battle)
        if inspect.isawaitable(order):
            self.rival.answer(event.reply, _NoOrder())
            raise TypeError(
                f"opponent {type(self.opponent).__name__}.choose_move returned "
                "an awaitable; opponents must choose synchronously"
            )
        self.rival.answer(event.reply, order)

    def _advance(self) -> Battle:
        """Answer the opponent's requests until the agent must act or its battle ends; a
        popup before the battle starts is the server refusing it (:class:`ChallengeRefused`)."""
        while True:
            event = self._next_event()
            if isinstance(event.item, _Popup):
                if self.battle is None and self.rival_battle is None:
                    if self._challenge is not None:  # it would wait for a battle forever
                        self._challenge.cancel()
                    raise ChallengeRefused(
                        f"{self.server_configuration.websocket_url} refused the battle "
                        f"({self.battle_format}): {event.item.text}"
                    )
                logger.warning("popup from the server during a battle: %s", event.item.text)
                continue
            if event.role == "rival":
                self._on_rival_event(event)
                continue
            if self._is_stale(event):
                continue
            battle = event.item
            self.battle = battle
            self._agent_reply = event.reply
            if battle.finished:
                self._save_record(battle)
            return battle

    def _finish_battle(self) -> None:
        """Forfeit an unfinished battle and wait until both seats saw its end."""
        agent = self.battle
        if agent is not None and not agent.finished:
            if self._agent_reply is None:
                raise BattleAborted("battle in progress but the agent has no decision")
            self.agent.answer(self._agent_reply, ForfeitBattleOrder())
            self._agent_reply = None
        deadline = time.monotonic() + self.timeout
        while not self._seats_ended(agent):
            event = self._next_event(max(deadline - time.monotonic(), 0.0))
            if isinstance(event.item, _Popup):
                logger.warning("popup from the server: %s", event.item.text)
            elif event.role == "rival":
                self._on_rival_event(event, ending=True)
            elif self._is_stale(event):
                continue
            elif event.reply is not None:
                self.agent.answer(event.reply, _NoOrder())
        if agent is not None:
            self._save_record(agent)  # no-op if already saved

    def _seats_ended(self, agent: Battle | None) -> bool:
        """Whether both players saw the end of every battle they know, the opponent's seat
        that of ``agent``'s room included: its battle can exist before this backend has seen
        a decision of it (``rival_battle`` still unset), and poke-env refuses to reset a
        player with a battle still running."""
        if agent is not None:
            theirs = self.rival._battles.get(agent.battle_tag)
            if not agent.finished or theirs is None or not theirs.finished:
                return False
        players = (self.agent._battles, self.rival._battles)
        # list(): one C-level copy, as the loop thread may add a battle meanwhile
        return all(b.finished for battles in players for b in list(battles.values()))

    def _drain(self) -> None:
        """Answer leftover events of ended battles (a lost connection still raises)."""
        while True:
            try:
                event = self._events.get_nowait()
            except queue.Empty:
                return
            if event.item is _CLOSED or event.role == "challenge":
                self._events.put(event)
                self._next_event()  # raises BattleAborted
            if event.reply is not None:
                player = self.agent if event.role == "agent" else self.rival
                player.answer(event.reply, _NoOrder())

    # -- backend API
    def reset(self, seed: int | None = None) -> Battle:
        """Start the next battle (``seed`` is ignored: the server picks the teams)."""
        if self._closed:
            raise RuntimeError("backend is closed")
        if not self.connected:
            raise BattleAborted(f"not connected to {self.server_configuration.websocket_url}")
        self._finish_battle()
        self._drain()
        if (
            self._challenge is not None
            and self._challenge.done()
            and not self._challenge.cancelled()
            and self._challenge.exception() is not None
        ):
            raise BattleAborted(f"challenge failed: {self._challenge.exception()!r}")
        for player in (self.agent, self.rival):
            player.reset_battles()
        if self.rival_battle is not None:  # the opponent may be shared: drop only ours
            opponent_battles(self.opponent).pop(self.rival_battle.battle_tag, None)
        self._stale_tags = {b.battle_tag for b in (self.battle, self.rival_battle) if b}
        self.battle = self.rival_battle = None
        if self.agent.frames is not None:
            self.agent.frames.clear()
        self._challenge = asyncio.run_coroutine_threadsafe(
            self.agent.battle_against(self.rival, n_battles=1), self._loop
        )
        self._challenge.add_done_callback(self._on_challenge_done)
        return self._advance()

    def _on_challenge_done(self, future: Any) -> None:
        if not future.cancelled() and future.exception() is not None:
            self._events.put(_Event("challenge", future.exception()))

    def step(self, order: BattleOrder) -> Battle:
        if self._agent_reply is None:
            raise RuntimeError("the agent has no pending decision; call reset()")
        reply, self._agent_reply = self._agent_reply, None
        self.agent.answer(reply, order)
        return self._advance()

    def close(self) -> None:
        """Forfeit a running battle, close both websockets and stop the loop thread."""
        if self._closed:
            return
        self._closed = True
        if self._loop.is_running():
            future = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
            with contextlib.suppress(Exception):
                future.result(timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self._loop.close()

    async def _shutdown(self) -> None:
        battle = self.battle
        if battle is not None and not battle.finished and self.connected:
            if self._agent_reply is not None and not self._agent_reply.done():
                self._agent_reply.set_result(ForfeitBattleOrder())
                self._agent_reply = None
            else:
                with contextlib.suppress(Exception):
                    await self.agent.ps_client.send_message("/forfeit", battle.battle_tag)
        # Let message handlers (the forfeit, the /leave after a win) finish first.
        current = asyncio.current_task()
        listeners = {self.agent.listener_task, self.rival.listener_task}
        others = [t for t in asyncio.all_tasks() if t is not current and t not in listeners]
        if others and self.connected:
            await asyncio.wait(others, timeout=3)
        for player in (self.agent, self.rival):
            websocket = getattr(player.ps_client, "websocket", None)
            if websocket is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(websocket.close(), 5)
            # poke-env logs every cancelled message handler as CRITICAL.
            player.logger.setLevel(logging.CRITICAL + 1)
        tasks = [t for t in asyncio.all_tasks() if t is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _save_record(self, battle: Battle) -> None:
        if self.record_dir is None or not self.agent.frames:
            return
        self.record_dir.mkdir(parents=True, exist_ok=True)
        path = record_path(self.record_dir, battle.battle_tag)  # a server's name
        room = f">{battle.battle_tag}\n"
        frames = [f for f in self.agent.frames if f.startswith(room)]
        path.write_text("".join(json.dumps(frame) + "\n" for frame in frames))
        self.agent.frames.clear()
