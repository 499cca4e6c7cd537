"""Play a trained Maple policy live on a Showdown server: accept, challenge or ladder.

CLI (Hydra config ``conf/play.yaml``, schema :class:`PlayConfig`; unknown keys fail)::

    python -m trainer.play checkpoint=<ckpt or run dir> server=local mode=accept battles=5
    python -m trainer.play checkpoint=... server=local mode=challenge opponent=<name>
    python -m trainer.play checkpoint=... server=showdown mode=ladder username=... password=...

The policy runs as a *listening* poke-env ``Player`` in this process, on CPU: the
frozen-policy player of ``policy:<checkpoint>`` opponents (``PolicyOpponent``), with
the checkpoint's own encoder, one recurrent state per battle (zeroed at the battle's
first decision) and sampled actions (``sample=false``: greedy argmax), as in evaluation.

``server=local`` starts a Maple-managed Showdown server (127.0.0.1; ``port=`` to fix
its port) and prints the address a person opens in a browser; ``server=showdown`` is
the official server (wss://sim3.psim.us, an account with a password); any other value
is a server address (``ws://host:port/showdown/websocket``, ``wss://...`` or
``host:port``).

Modes: ``accept`` accepts ``battles`` challenges in the battle format (from anyone, or
only from ``opponent``); ``challenge`` challenges ``opponent`` ``battles`` times (one at
a time); ``ladder`` plays ``battles`` ladder games (needs ``username``). Each finished
battle is logged (won/lost/tie, turns, opponent, battle tag), then a summary line; the
results go to ``play.json`` in the run dir. Ctrl-C or SIGTERM stops the player and the
local server (exit code 128 + signal).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from omegaconf import MISSING

log = logging.getLogger("trainer.play")  # not __main__ under python -m

MODES = ("accept", "challenge", "ladder")
DEFAULT_USERNAME = "MapleAgent"
OFFICIAL_SERVER = "wss://sim3.psim.us/showdown/websocket"
SERVER_ALIASES = {"showdown": OFFICIAL_SERVER, "official": OFFICIAL_SERVER}
LOGIN_TIMEOUT = 60.0  # seconds to connect and log in


@dataclass
class PlayConfig:
    """``python -m trainer.play`` settings (``conf/play.yaml``)."""

    checkpoint: str = MISSING  # a checkpoint file or a run dir (its checkpoints/last.pt)
    server: str = "local"  # local | showdown | ws(s)://host:port/showdown/websocket | host:port
    mode: str = "accept"  # accept | challenge | ladder
    battles: int = 1
    username: str | None = None  # default MapleAgent (ladder: required)
    password: str | None = None  # for registered accounts (official server)
    opponent: str | None = None  # challenge: who; accept: only from this user (null: anyone)
    battle_format: str | None = None  # default: the checkpoint's
    sample: bool = True  # False: greedy (argmax over legal actions)
    seed: int | None = None
    port: int | None = None  # server=local: fixed port (default a free one)
    max_concurrent_battles: int = 1
    output: str | None = None  # JSON path; default <hydra run dir>/play.json


class PlayError(ValueError):
    """A play setting that cannot work (reported as one line by the CLI)."""


def validate(cfg: PlayConfig) -> None:
    """Raise :class:`PlayError` for a bad mode or a missing mode argument."""
    if cfg.mode not in MODES:
        raise PlayError(f"mode must be one of {'|'.join(MODES)}, got {cfg.mode!r}")
    if cfg.mode == "challenge" and not cfg.opponent:
        raise PlayError("mode=challenge needs opponent=<username> (the user to challenge)")
    if cfg.mode == "ladder" and not cfg.username:
        raise PlayError(
            "mode=ladder needs username=<account> (and password= on the official server)"
        )
    if cfg.battles < 1:
        raise PlayError(f"battles must be >= 1, got {cfg.battles}")
    if not 1 <= cfg.max_concurrent_battles <= 16:
        raise PlayError(
            f"max_concurrent_battles must be in 1..16, got {cfg.max_concurrent_battles}"
        )
    name = cfg.username or DEFAULT_USERNAME
    if not 1 <= len(name) <= 18:
        raise PlayError(f"username must have 1..18 characters, got {name!r}")
    if not cfg.server:
        raise PlayError("server must be 'local', 'showdown' or a server URL")


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

    from mapleenv.opponents.policy import PolicyOpponent

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

    from mapleenv.opponents.policy import FrozenPolicy

    env_cfg = (checkpoint.get("config") or {}).get("env") or {}
    battle_format = cfg.battle_format or env_cfg.get("battle_format") or "gen9randombattle"
    policy = FrozenPolicy.from_snapshot(checkpoint)
    player_class = _make_player_class()
    return player_class(
        [policy],
        sample=cfg.sample,
        seed=cfg.seed,
        name=cfg.username or DEFAULT_USERNAME,
        on_result=on_result,
        battle_format=battle_format,
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


def _mode_coroutine(player: Any, cfg: PlayConfig) -> Any:
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


class _Stop(BaseException):
    """SIGTERM, raised in the main thread. A ``BaseException`` like ``KeyboardInterrupt``:
    an ``except Exception`` the signal lands in (logging's ``emit``...) must not swallow it."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_stop(signum: int, frame: Any) -> None:
    raise _Stop(signum)


def summary_line(results: list[BattleResult], username: str) -> str:
    won = sum(r.result == "won" for r in results)
    lost = sum(r.result == "lost" for r in results)
    ties = len(results) - won - lost
    rate = f" ({won / len(results):.0%} won)" if results else ""
    return (
        f"summary: {username} played {len(results)} battles: {won} won, {lost} lost, "
        f"{ties} tied{rate}"
    )


def run(
    cfg: PlayConfig,
    output_dir: str | Path,
    on_ready: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Play ``cfg.battles`` battles; returns (and writes) the results document.

    ``on_ready`` is called with ``{"username", "websocket_url", "browser_url"}`` once the
    player is logged in. Stops the player and a local server on return, error, Ctrl-C or
    SIGTERM (which raise :class:`KeyboardInterrupt` / ``SystemExit`` here).
    """
    from mapleenv.showdown import ShowdownServer, external_server
    from trainer.checkpoint import load_checkpoint

    validate(cfg)
    checkpoint = load_checkpoint(cfg.checkpoint)  # FileNotFoundError / ValueError
    output_dir = Path(output_dir)
    output = Path(cfg.output) if cfg.output else output_dir / "play.json"
    username = cfg.username or DEFAULT_USERNAME
    results: list[BattleResult] = []

    def on_result(result: BattleResult) -> None:
        results.append(result)
        log.info(
            "battle %d/%d %s: %s in %d turns vs %s",
            len(results),
            cfg.battles,
            result.battle_tag,
            result.result,
            result.turns,
            result.opponent,
        )

    server = None
    player = None
    watch = RefusalWatch()
    mode_future: Future[Any] | None = None
    previous_term = None
    if threading.current_thread() is threading.main_thread():
        previous_term = signal.signal(signal.SIGTERM, _raise_stop)
    interrupted: str | None = None
    try:
        browser_url = None
        if cfg.server == "local":
            server = ShowdownServer(port=cfg.port, log_dir=output_dir / "showdown").start()
            server_configuration = server.server_configuration
            browser_url = f"http://localhost:{server.port}"
            log.info(
                "local Showdown server (pid %s) at %s: open %s in a browser",
                server.pid,
                server_configuration.websocket_url,
                browser_url,
            )
        else:
            url = SERVER_ALIASES.get(cfg.server, cfg.server)
            server_configuration = external_server(url)
        player = build_player(cfg, checkpoint, server_configuration, on_result)
        player.logger.addHandler(watch)
        wait_logged_in(player)
        ready = {
            "username": username,
            "websocket_url": server_configuration.websocket_url,
            "browser_url": browser_url,
        }
        what = {
            "accept": "waiting for %d challenge(s) in %s%s",
            "challenge": "challenging %s %d time(s) in %s",
            "ladder": "searching %d ladder game(s) in %s",
        }[cfg.mode]
        args: tuple[Any, ...] = {
            "accept": (
                cfg.battles,
                player.format,
                f" from {cfg.opponent}" if cfg.opponent else " from anyone",
            ),
            "challenge": (cfg.opponent, cfg.battles, player.format),
            "ladder": (cfg.battles, player.format),
        }[cfg.mode]
        log.info(
            "ready: logged in as %s on %s; " + what,
            username,
            server_configuration.websocket_url,
            *args,
        )
        if on_ready is not None:
            on_ready(ready)
        mode_future = asyncio.run_coroutine_threadsafe(
            _mode_coroutine(player, cfg), player.ps_client.loop
        )
        while True:
            try:
                mode_future.result(timeout=1.0)
                break
            except TimeoutError:
                if watch.refusal is not None:
                    raise PlayError(f"the server refused: {watch.refusal}") from None
                if player.listen_future.done():
                    raise PlayError(
                        f"lost the connection to {server_configuration.websocket_url}"
                    ) from None
    except KeyboardInterrupt:
        interrupted = "SIGINT"
    except _Stop as stop:
        interrupted = str(stop)
    finally:
        if mode_future is not None:
            mode_future.cancel()
        if player is not None:
            player.logger.removeHandler(watch)
            _stop_listening(player)
        if server is not None:
            server.stop()
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
    document = {
        "checkpoint": str(cfg.checkpoint),
        "server": cfg.server,
        "mode": cfg.mode,
        "username": username,
        "battle_format": player.format if player else None,
        "policy": "sampled" if cfg.sample else "greedy",
        "interrupted": interrupted,
        "battles": [asdict(r) for r in results],
        "wins": sum(r.result == "won" for r in results),
        "losses": sum(r.result == "lost" for r in results),
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(document, indent=2) + "\n")
    log.info(
        "%s%s; results: %s",
        summary_line(results, username),
        f" (interrupted by {interrupted})" if interrupted else "",
        output,
    )
    return document


def _stop_listening(player: Any) -> None:
    client = player.ps_client
    if player.listen_future.done() or not hasattr(client, "websocket"):
        player.listen_future.cancel()
        return
    try:
        asyncio.run_coroutine_threadsafe(client.stop_listening(), client.loop).result(5.0)
    except Exception as exc:  # closing a dead socket: nothing left to stop
        log.debug("stop listening: %s", exc)
    player.listen_future.cancel()


def _register_schema() -> None:
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(name="play_schema", node=PlayConfig)


def main() -> None:
    """Console entry point: Hydra app over ``conf/play.yaml``."""
    import hydra
    import torch
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import DictConfig, OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from mapleenv.showdown import ShowdownError

    torch.set_num_threads(1)  # one small batch-1 forward per decision
    _register_schema()
    conf_dir = str(Path(__file__).resolve().parent.parent / "conf")

    @hydra.main(version_base="1.3", config_path=conf_dir, config_name="play")
    def _app(raw: DictConfig) -> None:
        try:
            cfg = OmegaConf.to_object(raw)
            assert isinstance(cfg, PlayConfig)
            document = run(cfg, HydraConfig.get().runtime.output_dir)
        except (FileNotFoundError, ValueError, ShowdownError, OmegaConfBaseException) as exc:
            log.error("%s", exc)
            sys.exit(2)
        if document["interrupted"]:
            sys.exit(128 + int(signal.Signals[document["interrupted"]]))

    _app()


if __name__ == "__main__":
    main()
