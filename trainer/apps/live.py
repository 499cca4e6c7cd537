"""The listening policy player of ``python -m trainer.play``: a frozen Maple policy as a
poke-env ``Player`` that logs in, accepts/sends challenges or ladders, and reports each
finished battle; plus the watch for Showdown's refusal popups."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from trainer.config import PlayConfig, team_path

log = logging.getLogger("trainer.play")

DEFAULT_USERNAME = "MapleAgent"
LOGIN_TIMEOUT = 60.0  # seconds to connect and log in


class PlayError(ValueError):
    """A play setting that cannot work (reported as one line by the CLI)."""


@dataclass
class BattleResult:
    """One finished battle, as logged and written to ``play.json``."""

    battle_tag: str
    result: str  # won | lost | tie
    turns: int
    opponent: str | None


def _make_player_class() -> type:
    """The listening player class (built lazily: poke-env and torch load on first use)."""
    from poke_env.battle.abstract_battle import AbstractBattle
    from poke_env.player.battle_order import BattleOrder

    from mapleenv.opponents import PolicyOpponent

    class LivePolicyPlayer(PolicyOpponent):
        """A frozen Maple policy as a listening poke-env player (see module docs)."""

        def __init__(
            self, *args: Any, on_result: Callable[[BattleResult], None] | None = None, **kwargs: Any
        ):
            super().__init__(*args, **kwargs)  # PolicyOpponent: start_listening=False
            self.on_result = on_result
            self.results: list[BattleResult] = []
            client = self.ps_client
            client._listening_coroutine = asyncio.run_coroutine_threadsafe(
                client.listen(), client.loop
            )

        @property
        def listen_future(self) -> Future[Any]:
            return self.ps_client._listening_coroutine

        def choose_move(self, battle: AbstractBattle) -> BattleOrder:
            if battle.battle_tag not in self._states:
                log.info("battle started: %s vs %s", battle.battle_tag, battle.opponent_username)
            return super().choose_move(battle)

        def _battle_finished_callback(self, battle: AbstractBattle) -> None:
            self._states.pop(battle.battle_tag, None)
            outcome = {True: "won", False: "lost"}.get(battle.won, "tie")  # type: ignore[arg-type]
            result = BattleResult(
                battle.battle_tag, outcome, int(battle.turn), battle.opponent_username
            )
            self.results.append(result)
            if self.on_result is not None:
                self.on_result(result)

    return LivePolicyPlayer


def build_player(
    cfg: PlayConfig,
    checkpoint: dict[str, Any],
    server_configuration: Any,
    on_result: Callable[[BattleResult], None] | None = None,
) -> Any:
    """The listening policy player for ``checkpoint`` (connecting and logging in)."""
    from poke_env.ps_client import AccountConfiguration

    from mapleenv.opponents import FrozenPolicy
    from mapleenv.showdown import team_pool

    env_cfg = (checkpoint.get("config") or {}).get("env") or {}
    battle_format = cfg.battle_format or env_cfg.get("battle_format") or "gen9randombattle"
    team = team_pool(  # validated by the pinned simulator for a local server
        team_path(cfg.team or env_cfg.get("team")),
        battle_format,
        seed=cfg.seed,
        validate=cfg.server == "local",
    )
    policy = FrozenPolicy.from_snapshot(checkpoint)
    player_class = _make_player_class()
    return player_class(
        [policy],
        sample=cfg.sample,
        seed=cfg.seed,
        name=cfg.username or DEFAULT_USERNAME,
        on_result=on_result,
        battle_format=battle_format,
        team=team,
        account_configuration=AccountConfiguration(cfg.username or DEFAULT_USERNAME, cfg.password),
        server_configuration=server_configuration,
        max_concurrent_battles=cfg.max_concurrent_battles,
        log_level=logging.WARNING,
    )


def wait_logged_in(player: Any, timeout: float = LOGIN_TIMEOUT) -> None:
    """Wait until ``player`` is logged in; :class:`PlayError` if its connection ends first
    or the deadline passes."""
    client = player.ps_client
    deadline = time.monotonic() + timeout
    while not client.logged_in.is_set():
        if player.listen_future.done():
            raise PlayError(f"could not connect to {client.websocket_url} (see the error above)")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise PlayError(
                f"not logged in as {player.username!r} on {client.websocket_url} "
                f"after {timeout:.0f} s (name taken, wrong password, or server "
                "unreachable?)"
            )
        waiter = asyncio.run_coroutine_threadsafe(
            asyncio.wait_for(client.logged_in.wait(), min(remaining, 1.0)), client.loop
        )
        with contextlib.suppress(TimeoutError):
            waiter.result()


def mode_coroutine(player: Any, cfg: PlayConfig) -> Any:
    """The poke-env coroutine that plays ``cfg.battles`` battles in ``cfg.mode``."""
    from poke_env.data.normalize import to_id_str

    if cfg.mode == "accept":
        return player.accept_challenges(cfg.opponent or None, cfg.battles)
    if cfg.mode == "challenge":
        return player.send_challenges(to_id_str(str(cfg.opponent)), cfg.battles)
    return player.ladder(cfg.battles)


# Popups with which Showdown refuses a challenge or a ladder search (server/chat-commands,
# server/ladders): the request is gone, so waiting for its battle would wait forever.
REFUSALS = (
    "was not found",
    "is not accepting challenges",
    "can't battle yourself",
    "must choose a username",
    "is not ladderable",
    "format is invalid",
    "barred from starting",
    "banned from battling",
    "requires you to be rank",
    "already challenging someone",
)


class RefusalWatch(logging.Handler):
    """Catches the refusal popups poke-env logs (``Popup message received: |popup|...``)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.refusal: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if self.refusal is None and message.startswith("Popup message received"):
            text = message.split("|popup|", 1)[-1].replace("||", " ").strip()
            if any(refusal in text for refusal in REFUSALS):
                self.refusal = text
