"""``python -m trainer.play``: the shipped agent as a listening player on a real server.

The integration tests run the CLI as a subprocess with ``server=local`` (it starts its
own Showdown server), challenge it from a poke-env ``RandomPlayer`` and check the
logged and written results, and that no server is left behind (also on SIGTERM).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from conftest import pid_alive
from poke_env.player import RandomPlayer
from poke_env.ps_client import AccountConfiguration, ServerConfiguration
from warm_cli import run_python

from trainer.apps.live import PlayError
from trainer.apps.play import run, validate
from trainer.config import PlayConfig

ROOT = Path(__file__).resolve().parents[3]
CHECKPOINT = ROOT / "models" / "attention_ppo_gen9random.pt"
AUTH_URL = "https://play.pokemonshowdown.com/action.php?"


# ------------------------------------------------------------------ settings errors


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"mode": "watch"}, "mode must be one of accept|challenge|ladder"),
        ({"mode": "challenge"}, "mode=challenge needs opponent="),
        ({"mode": "ladder"}, "mode=ladder needs username="),
        ({"battles": 0}, "battles must be >= 1"),
        ({"username": "x" * 19}, "username must have 1..18 characters"),
    ],
)
def test_bad_settings_are_one_line_errors(overrides: dict, message: str) -> None:
    cfg = PlayConfig(checkpoint=str(CHECKPOINT), **overrides)
    with pytest.raises(PlayError, match=re.escape(message)) as info:
        validate(cfg)
    assert "\n" not in str(info.value)


def test_missing_checkpoint_fails_before_any_server(tmp_path: Path) -> None:
    cfg = PlayConfig(checkpoint=str(tmp_path / "nope.pt"))
    with pytest.raises(FileNotFoundError, match="checkpoint not found"):
        run(cfg, tmp_path)
    assert not (tmp_path / "showdown").exists()


@pytest.mark.integration
def test_cli_reports_a_bad_setting_in_one_line(tmp_path: Path) -> None:
    proc = run_python(
        [
            sys.executable,
            "-m",
            "trainer.play",
            f"checkpoint={CHECKPOINT}",
            "mode=challenge",
            f"hydra.run.dir={tmp_path}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == ""  # the preflight's line is on stderr
    errors = [line for line in proc.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1 and "mode=challenge needs opponent=" in errors[0]


# ----------------------------------------------------------------- live integration


class Agent:
    """``python -m trainer.play`` as a subprocess; its output lines (stdout and stderr) read
    by a thread each."""

    def __init__(self, tmp_path: Path, *overrides: str):
        self.run_dir = tmp_path / "run"
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        self.stdout: list[str] = []  # the results only: the log lines are on stderr
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "trainer.play",
                f"checkpoint={CHECKPOINT}",
                "server=local",
                f"hydra.run.dir={self.run_dir}",
                *overrides,
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            # a test run started in the background inherits SIGINT ignored (and Python then
            # installs no Ctrl-C handler): the agent must get the default, as from a terminal
            preexec_fn=_default_sigint,
        )
        self.readers = [
            threading.Thread(target=self._read, args=(stream, kept), daemon=True)
            for stream, kept in ((self.proc.stdout, self.stdout), (self.proc.stderr, None))
        ]
        for reader in self.readers:
            reader.start()

    def _read(self, stream: IO[str] | None, kept: list[str] | None) -> None:
        assert stream is not None
        for line in stream:
            if kept is not None:
                kept.append(line.rstrip("\n"))
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout: float) -> re.Match[str]:
        """The first (new) output line matching ``pattern``, within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(
                    f"no line matching {pattern!r} in {timeout} s:\n" + "\n".join(self.output)
                )
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            self.output.append(line)
            match = re.search(pattern, line)
            if match:
                return match

    def finish(self, timeout: float) -> int:
        code = self.proc.wait(timeout=timeout)
        for reader in self.readers:
            reader.join(timeout=30)  # it ends at the end of the output
        while not self.lines.empty():
            self.output.append(self.lines.get_nowait())
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)


@pytest.fixture
def agent_factory(tmp_path: Path) -> Iterator[Callable[..., Agent]]:
    started: list[Agent] = []

    def start(*overrides: str) -> Agent:
        agent = Agent(tmp_path, *overrides)
        started.append(agent)
        return agent

    yield start
    for agent in started:
        agent.kill()


def _ready(agent: Agent) -> tuple[int, int]:
    """Wait for the local server and the login; returns (server port, server pid)."""
    server = agent.wait_for(
        r"local Showdown server \(pid (\d+)\) .* open "
        r"http://localhost:(\d+) in a browser",
        timeout=180,
    )
    agent.wait_for(r"ready: logged in as ", timeout=120)
    return int(server.group(2)), int(server.group(1))


@pytest.mark.integration
@pytest.mark.timeout(420)
def test_random_player_challenges_the_listening_agent_twice(
    agent_factory: Callable[..., Agent],
) -> None:
    name = f"maple{os.getpid()}"[:18]
    agent = agent_factory("mode=accept", "battles=2", f"username={name}")
    port, server_pid = _ready(agent)
    assert pid_alive(server_pid)

    challenger = _random_player(port, f"chal{os.getpid()}"[:18])
    asyncio.run(asyncio.wait_for(challenger.send_challenges(name.lower(), 2), timeout=240))
    assert challenger.n_finished_battles == 2

    assert agent.finish(timeout=60) == 0, "\n".join(agent.output)
    logged = [
        re.search(r"battle (\d)/2 (\S+): (won|lost|tie) in (\d+) turns vs (\S+)", line)
        for line in agent.output
    ]
    logged = [m for m in logged if m]
    assert [m.group(1) for m in logged] == ["1", "2"]
    assert not any(m.string in agent.stdout for m in logged)  # log lines: stderr
    # stdout holds the result only: the summary line
    assert len(agent.stdout) == 1, agent.stdout
    assert re.search(r"summary: \S+ played 2 battles: .*; results: ", agent.stdout[0])

    document = _results(agent)
    assert document["mode"] == "accept" and document["interrupted"] is None
    assert [b["battle_tag"] for b in document["battles"]] == [m.group(2) for m in logged]
    assert document["wins"] + document["losses"] <= 2
    # The agent's results agree with the challenger's view of the same battles.
    for entry in document["battles"]:
        battle = challenger.battles[entry["battle_tag"]]
        assert battle.finished
        assert entry["opponent"] == challenger.username
        expected = {True: "lost", False: "won"}.get(battle.won, "tie")  # type: ignore[arg-type]
        assert entry["result"] == expected
        assert entry["turns"] == battle.turn > 0
    assert not pid_alive(server_pid), "the local Showdown server outlived trainer.play"


@pytest.mark.integration
@pytest.mark.timeout(300)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_agent_and_its_server(
    agent_factory: Callable[..., Agent], signum: signal.Signals
) -> None:
    agent = agent_factory("mode=accept", "battles=3")
    _, server_pid = _ready(agent)
    agent.proc.send_signal(signum)
    assert agent.finish(timeout=60) == 128 + signum
    document = _results(agent)
    assert document["interrupted"] == signum.name and document["battles"] == []
    assert len(agent.stdout) == 1 and "interrupted by " + signum.name in agent.stdout[0]
    assert not pid_alive(server_pid)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _random_player(port: int, name: str, **kwargs: Any) -> RandomPlayer:
    kwargs.setdefault("battle_format", "gen9randombattle")
    return RandomPlayer(
        account_configuration=AccountConfiguration(name, None),
        server_configuration=ServerConfiguration(
            f"ws://127.0.0.1:{port}/showdown/websocket", AUTH_URL
        ),
        log_level=logging.ERROR,
        **kwargs,
    )


def _results(agent: Agent) -> dict:
    return json.loads((agent.run_dir / "play.json").read_text())


@pytest.mark.integration
@pytest.mark.timeout(420)
def test_the_agent_plays_gen9ou_with_a_team_from_a_folder(
    agent_factory: Callable[..., Agent],
) -> None:
    """``team=`` (docs/teams.md): the agent brings one of the folder's teams and leads
    with its first Pokémon; the challenger brings its own."""
    teams = ROOT / "teams" / "gen9ou"
    name = f"maple{os.getpid()}"[:18]
    agent = agent_factory(
        "mode=accept", "battles=1", f"username={name}", "battle_format=gen9ou", f"team={teams}"
    )
    port, _ = _ready(agent)
    challenger = _random_player(
        port,
        f"chal{os.getpid()}"[:18],
        battle_format="gen9ou",
        team=(teams / "offense.txt").read_text(),
    )
    asyncio.run(asyncio.wait_for(challenger.send_challenges(name.lower(), 1), timeout=240))
    assert challenger.n_finished_battles == 1
    assert agent.finish(timeout=60) == 0, "\n".join(agent.output)
    (battle,) = challenger.battles.values()
    firsts = {
        text.split("\n", 1)[0].split(" @ ")[0].lower().replace(" ", "")
        for text in (p.read_text() for p in teams.glob("*.txt"))
    }
    seen = [mon.species for mon in battle.opponent_team.values()]
    assert seen[0] in firsts  # the agent's lead: the first Pokémon of one of the teams
    assert battle.turn > 0 and _results(agent)["battles"][0]["turns"] == battle.turn


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_agent_challenges_a_player_on_an_external_server(
    agent_factory: Callable[..., Agent], showdown_server
) -> None:
    port = showdown_server.port
    target = _random_player(port, f"target{os.getpid()}"[:18])
    loop = target.ps_client.loop
    asyncio.run_coroutine_threadsafe(
        asyncio.wait_for(target.ps_client.logged_in.wait(), 60), loop
    ).result()
    name = f"chlg{os.getpid()}"[:18]
    accepted = asyncio.run_coroutine_threadsafe(target.accept_challenges(name, 1), loop)
    agent = agent_factory(
        f"server=127.0.0.1:{port}",
        "mode=challenge",
        f"opponent={target.username}",
        "battles=1",
        f"username={name}",
    )
    agent.wait_for(r"ready: logged in as .* challenging ", timeout=180)
    accepted.result(timeout=240)
    assert agent.finish(timeout=60) == 0, "\n".join(agent.output)
    document = _results(agent)
    assert [b["opponent"] for b in document["battles"]] == [target.username]
    assert document["battles"][0]["battle_tag"] in target.battles


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_agent_plays_a_ladder_game_on_its_local_server(
    agent_factory: Callable[..., Agent],
) -> None:
    name = f"ladr{os.getpid()}"[:18]
    agent = agent_factory("mode=ladder", "battles=1", f"username={name}")
    port, server_pid = _ready(agent)
    rival = _random_player(port, f"rival{os.getpid()}"[:18])
    asyncio.run(asyncio.wait_for(rival.ladder(1), timeout=240))
    assert agent.finish(timeout=60) == 0, "\n".join(agent.output)
    document = _results(agent)
    assert document["mode"] == "ladder"
    assert [b["opponent"] for b in document["battles"]] == [rival.username]
    assert not pid_alive(server_pid)


@pytest.mark.integration
def test_unreachable_server_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cfg = PlayConfig(checkpoint=str(CHECKPOINT), server=f"127.0.0.1:{port}")
    with pytest.raises(PlayError, match=f"could not connect to ws://127.0.0.1:{port}/"):
        run(cfg, tmp_path)


@pytest.mark.integration
@pytest.mark.timeout(180)
def test_challenging_a_user_who_is_not_online_fails_clearly(
    tmp_path: Path, showdown_server
) -> None:
    cfg = PlayConfig(
        checkpoint=str(CHECKPOINT),
        server=f"127.0.0.1:{showdown_server.port}",
        mode="challenge",
        opponent="nobodyhere",
        username=f"lone{os.getpid()}"[:18],
    )
    start = time.monotonic()
    with pytest.raises(PlayError, match="the server refused: The user 'nobodyhere' was not found"):
        run(cfg, tmp_path)
    assert time.monotonic() - start < 60
