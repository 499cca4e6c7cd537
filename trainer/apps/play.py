"""``python -m trainer.play``: a trained policy plays live on a Showdown server (accept
challenges, challenge a user, or ladder), on a Maple-started local server or any server.
Usage, modes and the browser walk-through: docs/play.md."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import asdict
from pathlib import Path
from typing import Any

from trainer.apps.live import (
    DEFAULT_USERNAME,
    BattleResult,
    PlayError,
    RefusalWatch,
    build_player,
    mode_coroutine,
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
    from mapleenv.showdown import ShowdownServer, external_server

    validate(cfg)
    import_plugins(cfg.plugins)  # the user's own only, never the checkpoint's
    # the safe loader; its encoder must be registered: FileNotFoundError / ValueError
    checkpoint = read_snapshot(cfg.checkpoint)
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
        # a signal landing between scheduling the coroutine and keeping its future would
        # leave it running unseen (never cancelled): hold SIGINT/SIGTERM across the two
        with _signals_held():
            mode_future = asyncio.run_coroutine_threadsafe(
                mode_coroutine(player, cfg), player.ps_client.loop
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


def main() -> None:
    """Console entry point: Hydra app over ``conf/play.yaml``."""
    import hydra
    import torch
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import DictConfig, OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from mapleenv.showdown import ShowdownError

    torch.set_num_threads(1)  # one small batch-1 forward per decision
    conf_dir = str(Path(__file__).resolve().parents[2] / "conf")

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
