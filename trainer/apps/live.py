"""The listening policy player of ``python -m trainer.play``: a frozen Maple policy as a
poke-env ``Player`` that logs in, accepts/sends challenges or ladders, and reports each
finished battle; plus the watch for Showdown's refusal popups."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from mapleenv.paths import printable, read_small_file
from trainer.apps.guard import OWN_LINE, RefusalWatch
from trainer.config import PlayConfig, checkpoint_battle_format, checkpoint_mask_futile, team_path

log = logging.getLogger("trainer.play")

DEFAULT_USERNAME = "MapleAgent"
LOGIN_TIMEOUT = 60.0  # seconds to connect and log in
SHOWDOWN_TURN_LIMIT = 1000  # Showdown ends a battle there itself (a server that does not...)
PASSWORD_ENV = "MAPLE_PASSWORD"
MAX_PASSWORD_FILE = 4096  # bytes


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

    from mapleenv.actions import by_slot
    from mapleenv.bounded import BoundedMessages
    from mapleenv.opponents import PolicyOpponent
    from trainer.apps.battle_limits import BattleLimits

    class LivePolicyPlayer(BattleLimits, BoundedMessages, PolicyOpponent):
        """A frozen Maple policy as a listening poke-env player (see module docs): what it
        keeps of a server's messages is bounded (:class:`~mapleenv.bounded.BoundedMessages`),
        and a battle past ``max_turns`` or ``battle_s`` seconds is forfeited
        (:class:`~trainer.apps.battle_limits.BattleLimits`)."""

        def __init__(
            self,
            *args: Any,
            on_result: Callable[[BattleResult], None] | None = None,
            before_listening: Callable[[Any], None] | None = None,
            own_lines: int = 0,
            max_turns: int = SHOWDOWN_TURN_LIMIT,
            battle_s: float = 3600.0,
            **kwargs: Any,
        ):
            super().__init__(*args, **kwargs)  # PolicyOpponent: start_listening=False
            self.bound_messages(filter_log=False)  # trainer.play's flood guard filters them
            self.max_battles = own_lines + 16  # the battles asked for, and a margin
            self.limit_battles(max_turns, battle_s)
            self.on_result = on_result
            # the first ``own_lines`` battles' start lines pass the flood guard (OWN_LINE)
            self.own_lines, self.started = own_lines, 0
            self.results: list[BattleResult] = []
            if before_listening is not None:  # e.g. filters on the logger poke-env just made
                before_listening(self)
            client = self.ps_client
            client._listening_coroutine = asyncio.run_coroutine_threadsafe(
                client.listen(), client.loop
            )

        @property
        def listen_future(self) -> Future[Any]:
            return self.ps_client._listening_coroutine

        def choose_move(self, battle: AbstractBattle) -> BattleOrder:
            if battle.battle_tag not in self._states:
                self.started += 1
                log.info(
                    "battle started: %s vs %s",
                    printable(battle.battle_tag),
                    printable(battle.opponent_username),
                    extra={OWN_LINE: self.started <= self.own_lines},
                )
            return by_slot(super().choose_move(battle), battle)  # switches by slot

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


def resolve_password(cfg: PlayConfig) -> str | None:
    """The account's password: ``password`` (set in code or by an interpolation such as
    ``${oc.env:VAR}``), else the first line of ``password_file``, else ``$MAPLE_PASSWORD``;
    ``None`` without any. A password file must be a small regular file; one that other
    users may read is logged as a warning. Messages never hold the password."""
    if cfg.password:
        return cfg.password
    if cfg.password_file:
        path = os.path.expanduser(cfg.password_file)
        text = read_small_file(
            path, key="password_file", limit=MAX_PASSWORD_FILE, what="a password file"
        )
        password = text.splitlines()[0].strip() if text.strip() else ""
        if not password:
            raise PlayError(f"password_file: {path} is empty")
        if os.stat(path).st_mode & 0o077:
            log.warning("password_file %s can be read by other users: chmod 600 it", path)
        return password
    return os.environ.get(PASSWORD_ENV) or None


def battle_setup(cfg: PlayConfig, checkpoint: dict[str, Any]) -> tuple[str, Any]:
    """The format and the team pool the agent plays with, checked before any server
    starts: a format the pinned simulator does not know (``server=local``), or one that
    needs a team when none is set, is a :class:`PlayError`; team files are read, bounded
    and (``server=local``) validated here."""
    from mapleenv.showdown import ShowdownError, check_format, team_pool

    env_cfg = (checkpoint.get("config") or {}).get("env") or {}
    battle_format = checkpoint_battle_format(cfg.battle_format, checkpoint)
    source = team_path(cfg.team or env_cfg.get("team"))
    try:
        check_format(battle_format, has_team=True)  # known to the pinned simulator?
        known = True
    except ValueError as exc:
        if cfg.server == "local":  # an external server may have formats of its own
            raise PlayError(f"battle_format: {exc}") from None
        known = False
    except ShowdownError:  # no Node here: a local server cannot start either, and says so
        known = False
    if known:
        try:
            check_format(battle_format, has_team=source is not None, team_key="team")
        except ValueError as exc:
            raise PlayError(f"battle_format: {exc}") from None
    team = team_pool(source, battle_format, seed=cfg.seed, validate=cfg.server == "local")
    return battle_format, team


def build_player(
    cfg: PlayConfig,
    checkpoint: dict[str, Any],
    server_configuration: Any,
    on_result: Callable[[BattleResult], None] | None = None,
    *,
    setup: tuple[str, Any] | None = None,
    password: str | None = None,
    before_listening: Callable[[Any], None] | None = None,
) -> Any:
    """The listening policy player for ``checkpoint`` (connecting and logging in);
    ``setup`` is :func:`battle_setup`'s result (made here when not given);
    ``before_listening(player)`` runs once the player exists, before it connects (a hostile
    server's first messages then already meet its log filters). It masks the
    moves that surely fail when ``mask_futile`` says so (default: as the checkpoint's run)."""
    from poke_env.ps_client import AccountConfiguration

    from mapleenv.opponents import FrozenPolicy

    battle_format, team = setup if setup is not None else battle_setup(cfg, checkpoint)
    mask_futile = checkpoint_mask_futile(cfg.mask_futile, checkpoint)  # play's key wins
    policy = FrozenPolicy.from_snapshot(checkpoint, mask_futile=mask_futile)
    player_class = _make_player_class()
    return player_class(
        [policy],
        sample=cfg.sample,
        mask_futile=mask_futile,
        searcher=_searcher(cfg, policy),
        seed=cfg.seed,
        name=cfg.username or DEFAULT_USERNAME,
        on_result=on_result,
        before_listening=before_listening,
        own_lines=cfg.battles,
        max_turns=play_max_turns(cfg, checkpoint),
        battle_s=math.inf if cfg.battle_minutes is None else 60.0 * cfg.battle_minutes,
        battle_format=battle_format,
        team=team,
        account_configuration=AccountConfiguration(cfg.username or DEFAULT_USERNAME, password),
        server_configuration=server_configuration,
        max_concurrent_battles=cfg.max_concurrent_battles,
        log_level=logging.WARNING,
    )


def play_max_turns(cfg: PlayConfig, checkpoint: dict[str, Any]) -> int:
    """The turn past which a battle is forfeited: ``max_turns``, else the checkpoint's
    ``env.max_turns``, else Showdown's own limit (1000)."""
    env_cfg = (checkpoint.get("config") or {}).get("env") or {}
    value = cfg.max_turns if cfg.max_turns is not None else env_cfg.get("max_turns")
    return int(value) if value is not None else SHOWDOWN_TURN_LIMIT


def _searcher(cfg: PlayConfig, policy: Any) -> Any:
    """A ``mapleenv.search.Searcher`` when ``search.enabled`` (docs/search.md), else None;
    with ``search.opponent=policy`` the agent's network (a ``FrozenPolicy``) models the
    opponent."""
    if not cfg.search.enabled:
        return None
    from mapleenv.search import Searcher, make_opponent_model

    model = make_opponent_model(cfg.search, policy.network, policy.encoder, policy.mask_futile)
    return Searcher(cfg.search, opponent_model=model)


def wait_logged_in(
    player: Any, timeout: float = LOGIN_TIMEOUT, watch: RefusalWatch | None = None
) -> None:
    """Wait until ``player`` is logged in; :class:`PlayError` if its connection ends
    first, the deadline passes, or ``watch`` sees a reason to stop (the name taken, the
    login failed, a flood of messages that cannot be handled)."""
    client = player.ps_client
    deadline = time.monotonic() + timeout
    while not client.logged_in.is_set():
        if watch is not None and watch.fatal is not None:
            raise PlayError(f"{client.websocket_url}: {watch.fatal}")
        if player.listen_future.done():
            why = (
                f": {watch.ended}"
                if watch is not None and watch.ended
                else " (see the error above)"
            )
            raise PlayError(f"could not connect to {client.websocket_url}{why}")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise PlayError(
                f"not logged in as {player.username!r} on {client.websocket_url} "
                f"after {timeout:.0f} s (name taken, wrong password, or server "
                "unreachable?)"
            )
        waiter = asyncio.run_coroutine_threadsafe(
            asyncio.wait_for(client.logged_in.wait(), min(remaining, 0.25)), client.loop
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
