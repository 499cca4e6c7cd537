"""``python -m trainer.play``: a trained policy plays live on a Showdown server (accept
challenges, challenge a user, or ladder), on a Maple-started local server or any server.
Usage, modes and the browser walk-through: docs/play.md."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mapleenv.paths import printable
from trainer.apps.guard import OWN_LINE, FloodGuard, QuietExplained, RefusalWatch
from trainer.apps.hydra_app import run_app
from trainer.apps.live import (
    DEFAULT_USERNAME,
    BattleResult,
    PlayError,
    battle_setup,
    build_player,
    mode_coroutine,
    resolve_password,
    wait_logged_in,
)
from trainer.config import PlayConfig

log = logging.getLogger("trainer.play")  # not __main__ under python -m

MODES = ("accept", "challenge", "ladder")
OFFICIAL_SERVER = "wss://sim3.psim.us/showdown/websocket"
SERVER_ALIASES = {"showdown": OFFICIAL_SERVER, "official": OFFICIAL_SERVER}


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
    if cfg.server != "local":
        from mapleenv.showdown import external_server

        try:
            external_server(SERVER_ALIASES.get(cfg.server, cfg.server))
        except ValueError as exc:
            raise PlayError(f"server: {exc}") from None
    if cfg.port is not None and not 1 <= cfg.port <= 65535:
        raise PlayError(f"port must be in 1..65535, got {cfg.port}")
    if cfg.max_turns is not None and cfg.max_turns < 1:
        raise PlayError(f"max_turns must be >= 1 or null, got {cfg.max_turns}")
    if cfg.battle_minutes is not None and not cfg.battle_minutes > 0:
        raise PlayError(f"battle_minutes must be > 0 or null, got {cfg.battle_minutes}")


class _Stop(BaseException):
    """SIGTERM, raised in the main thread. A ``BaseException`` like ``KeyboardInterrupt``:
    an ``except Exception`` the signal lands in (logging's ``emit``...) must not swallow it."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_stop(signum: int, frame: Any) -> None:
    raise _Stop(signum)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Block SIGINT and SIGTERM inside the block (main thread); they arrive after it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def summary_line(results: list[BattleResult], username: str) -> str:
    won = sum(r.result == "won" for r in results)
    lost = sum(r.result == "lost" for r in results)
    ties = len(results) - won - lost
    rate = f" ({won / len(results):.0%} won)" if results else ""
    return (
        f"summary: {username} played {len(results)} battles: {won} won, {lost} lost, "
        f"{ties} tied{rate}"
    )


def _console_guards(username: str) -> tuple[RefusalWatch, FloodGuard, QuietExplained]:
    """The refusal watch and the flood guard on poke-env's logger for the player, installed
    before it connects (a taken name is refused at once)."""
    watch = RefusalWatch()
    guard, quiet = FloodGuard(), QuietExplained(watch)
    player_logger = logging.getLogger(username)  # poke-env's logger for the player
    player_logger.addHandler(watch)
    guard.install([player_logger], console=quiet)
    return watch, guard, quiet


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
    from mapleenv.plugins import import_plugins
    from mapleenv.policies import read_snapshot
    from mapleenv.search import require_engine_for

    validate(cfg)
    import_plugins(cfg.plugins)  # the user's own only, never the checkpoint's
    # the safe loader; its encoder must be registered: FileNotFoundError / ValueError
    checkpoint = read_snapshot(cfg.checkpoint)
    setup = battle_setup(cfg, checkpoint)  # the format, the team files: before any server
    require_engine_for(cfg.search)  # EngineMissing: one line naming the install step
    password = resolve_password(cfg)
    output_dir = Path(output_dir)
    output = Path(cfg.output) if cfg.output else output_dir / "play.json"
    username = cfg.username or DEFAULT_USERNAME
    results: list[BattleResult] = []
    on_result = _result_logger(results, cfg.battles)

    server = None
    player = None
    watch, guard, quiet = _console_guards(username)
    mode_future: Future[Any] | None = None
    previous_term = None
    if threading.current_thread() is threading.main_thread():
        previous_term = signal.signal(signal.SIGTERM, _raise_stop)
    interrupted: str | None = None
    try:
        server, server_configuration, browser_url = _server(cfg, output_dir)
        player = build_player(
            cfg,
            checkpoint,
            server_configuration,
            on_result,
            setup=setup,
            password=password,
            # its console handler, made by poke-env just now: filtered before it connects
            before_listening=lambda made: guard.install([made.logger], console=quiet),
        )
        wait_logged_in(player, watch=watch)
        url = server_configuration.websocket_url
        _log_ready(cfg, player, username, url)
        if on_ready is not None:
            on_ready({"username": username, "websocket_url": url, "browser_url": browser_url})
        # a signal landing between scheduling the coroutine and keeping its future would
        # leave it running unseen (never cancelled): hold SIGINT/SIGTERM across the two
        with _signals_held():
            mode_future = asyncio.run_coroutine_threadsafe(
                mode_coroutine(player, cfg), player.ps_client.loop
            )
        _wait_for(mode_future, player, watch, url)
    except KeyboardInterrupt:
        interrupted = "SIGINT"
    except _Stop as stop:
        interrupted = str(stop)
    finally:
        if mode_future is not None:
            mode_future.cancel()
        if player is not None:
            _stop_listening(player)
        logging.getLogger(username).removeHandler(watch)  # the player logger's watch
        for line in guard.pending():
            log.warning("%s", line)
        guard.remove(quiet)
        if server is not None:
            server.stop()
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
    return _write_results(cfg, output, username, player, results, interrupted)


def _result_logger(results: list[BattleResult], battles: int) -> Callable[[BattleResult], None]:
    """The callback that keeps and logs each finished battle: one line each for the
    ``battles`` asked for, past the flood guard (:data:`~trainer.apps.guard.OWN_LINE`);
    any more, which only a server can cause, go through it."""

    def on_result(result: BattleResult) -> None:
        results.append(result)
        log.info(
            "battle %d/%d %s: %s in %d turns vs %s",
            len(results),
            battles,
            printable(result.battle_tag),  # names from the server: one log line each
            result.result,
            result.turns,
            printable(result.opponent),
            extra={OWN_LINE: len(results) <= battles},
        )

    return on_result


def _server(cfg: PlayConfig, output_dir: Path) -> tuple[Any, Any, str | None]:
    """(the local server or ``None``, poke-env's server configuration, the browser URL)."""
    from mapleenv.showdown import ShowdownServer, external_server

    if cfg.server != "local":
        return None, external_server(SERVER_ALIASES.get(cfg.server, cfg.server)), None
    server = ShowdownServer(port=cfg.port, log_dir=output_dir / "showdown").start()
    browser_url = f"http://localhost:{server.port}"
    log.info(
        "local Showdown server (pid %s) at %s: open %s in a browser",
        server.pid,
        server.server_configuration.websocket_url,
        browser_url,
    )
    return server, server.server_configuration, browser_url


def _log_ready(cfg: PlayConfig, player: Any, username: str, url: str) -> None:
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
    log.info("ready: logged in as %s on %s; " + what, username, url, *args)


def _wait_for(mode_future: Future[Any], player: Any, watch: RefusalWatch, url: str) -> None:
    """Wait for the mode's battles; :class:`PlayError` when the watch sees a reason to
    stop or the connection ends."""
    while True:
        try:
            mode_future.result(timeout=1.0)
            return
        except TimeoutError:
            player.overdue()  # battles past battle_minutes: forfeited
            if watch.fatal is not None:
                raise PlayError(f"{url}: {watch.fatal}") from None
            if watch.refusal is not None:
                raise PlayError(f"the server refused: {watch.refusal}") from None
            if player.listen_future.done():
                why = f": {watch.ended}" if watch.ended else ""
                raise PlayError(f"lost the connection to {url}{why}") from None


def _write_results(
    cfg: PlayConfig,
    output: Path,
    username: str,
    player: Any,
    results: list[BattleResult],
    interrupted: str | None,
) -> dict[str, Any]:
    """Write ``play.json`` and print the summary line, the result, on stdout (the log
    lines go to stderr and ``play.log``); returns the document."""
    from trainer.evaluation.output import write_json  # torch: not before the checks passed

    document = {
        "checkpoint": str(cfg.checkpoint),
        "server": cfg.server,
        "mode": cfg.mode,
        "username": username,
        "battle_format": player.format if player else None,
        "policy": "sampled" if cfg.sample else "greedy",
        "mask_futile": bool(player.mask_futile) if player else None,
        "interrupted": interrupted,
        "battles": [asdict(r) for r in results],
        "wins": sum(r.result == "won" for r in results),
        "losses": sum(r.result == "lost" for r in results),
    }
    write_json(output, document)  # atomic: a temp file, then a rename
    stopped = f" (interrupted by {interrupted})" if interrupted else ""
    print(f"{summary_line(results, username)}{stopped}; results: {output}", flush=True)
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


def refuse_password_argument(argv: list[str]) -> None:
    """Exit 2 with one line when the command line holds a password itself (every user of
    the machine can read a command line, and the shell keeps it): ``password=`` is taken
    only as an interpolation (``'password=${oc.env:VAR}'``); else ``password_file=`` or
    ``$MAPLE_PASSWORD`` (docs/security.md). The password is not printed."""
    for arg in argv:
        key, sep, value = arg.lstrip("+~").partition("=")
        if sep and key == "password" and value and not value.startswith("${"):
            print(
                "[trainer.play][ERROR] - password= on the command line can be read by every "
                "user of this machine (ps) and stays in the shell history: set "
                "MAPLE_PASSWORD=... or password_file=<file> instead (docs/security.md)",
                file=sys.stderr,
            )
            sys.exit(2)


def main() -> None:
    """Console entry point: Hydra app over ``conf/play.yaml``."""
    refuse_password_argument(sys.argv[1:])
    from omegaconf.errors import OmegaConfBaseException

    from mapleenv.showdown import ShowdownError

    run_app(
        "play",
        "trainer.play",
        _play,
        bad_input=(FileNotFoundError, ValueError, ShowdownError, OmegaConfBaseException),
    )


def _play(raw: Any) -> None:
    import torch
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    torch.set_num_threads(1)  # one small batch-1 forward per decision
    cfg = OmegaConf.to_object(raw)
    assert isinstance(cfg, PlayConfig)
    document = run(cfg, HydraConfig.get().runtime.output_dir)
    if document["interrupted"]:
        sys.exit(128 + int(signal.Signals[document["interrupted"]]))


if __name__ == "__main__":
    main()
