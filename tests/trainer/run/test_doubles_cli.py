"""Double battles through the CLIs (issue 32): the doubles smoke run trains and checkpoints
(PPO with kickstarting from the heuristic, self-play and reward normalization in one run;
REINFORCE), its checkpoint is evaluated and plays live (``trainer.play`` accepting a doubles
challenge on its local server), and singles-only settings or a checkpoint of the other game
are one line and exit 2 before anything starts."""

from __future__ import annotations

import asyncio
import csv
import json
import logging
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from builders import evaluate_json, run_module
from hydra import compose, initialize_config_dir
from poke_env.player import RandomPlayer
from poke_env.ps_client import AccountConfiguration, ServerConfiguration

from mapleenv import EnvSpec, PokemonEnv
from mapleenv.actions import action_space_size
from mapleenv.policies import policy_from_snapshot, snapshot_encoder
from trainer.__main__ import CONF_DIR
from trainer.config import ConfigError, to_train_config
from trainer.evaluation import evaluate_policy
from trainer.preflight import EvaluatePreflight, PlayPreflight, TrainPreflight
from trainer.run.checkpoint import load_checkpoint

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
SINGLES = ROOT / "models" / "attention_ppo_gen9random.pt"
DOUBLES = "env.battle_format=gen9randomdoublesbattle"


@pytest.fixture(scope="module")
def doubles_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A doubles smoke run: PPO vs random and itself, kickstarted from the heuristic."""
    run_dir = tmp_path_factory.mktemp("doubles_smoke")
    proc = run_module(
        "trainer",
        "+experiment=doubles_smoke",
        f"hydra.run.dir={run_dir}",
        "env.teacher=heuristic",
        "algo.kickstart_coef=1.0",
        "env.opponent={random: 0.5, self: 0.5}",
        "selfplay.every=1",
        "algo.norm_reward=true",
        "tensorboard=false",
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return run_dir


@pytest.mark.timeout(300)
def test_doubles_smoke_trains_and_checkpoints(doubles_run: Path) -> None:
    with (doubles_run / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [int(r["global_step"]) for r in rows] == [32, 64, 96]
    assert all(0 <= float(r["teacher_agreement"]) <= 1 for r in rows)
    assert all(float(r["kickstart_loss"]) > 0 for r in rows)
    ckpt = load_checkpoint(doubles_run)
    assert ckpt["policy"]["n_actions"] == action_space_size(9, doubles=True)
    assert snapshot_encoder(ckpt) == "doubles_basic" and ckpt["selfplay"] is not None


def test_the_heuristic_teachers_doubles_choices_are_legal_joint_actions() -> None:
    """Kickstarting's target: poke-env's heuristic picks a joint order; the env finds it
    among the legal actions (``teacher_action`` >= 0), not -1 (no target)."""
    env = PokemonEnv(
        battle_format="gen9randomdoublesbattle",
        encoder="doubles",
        teacher="heuristic",
        backend="direct",
        seed=3,
    )
    rng = np.random.default_rng(3)
    found = []
    try:
        obs, _ = env.reset(seed=3)
        for _ in range(120):
            teacher = int(obs["teacher_action"][0])
            found.append(teacher >= 0)
            action = teacher if teacher >= 0 else rng.choice(np.flatnonzero(obs["action_mask"]))
            assert teacher < 0 or obs["action_mask"][teacher]
            obs, _, terminated, truncated, _ = env.step(int(action))
            if terminated or truncated:
                obs, _ = env.reset()
    finally:
        env.close()
    # poke-env's "default" for a slot (rare) is no legal joint action: no target then
    assert np.mean(found) >= 0.95, np.mean(found)


@pytest.mark.timeout(200)
def test_doubles_reinforce_trains_the_attention_policy(tmp_path: Path) -> None:
    """REINFORCE (the LSTM's PPO runs above) on the attention policy's doubles tokens."""
    proc = run_module(
        "trainer",
        "+experiment=lstm_reinforce",  # the smoke run's PPO keys are not REINFORCE's
        DOUBLES,
        "model=attention",
        "model.token_size=16",
        "model.shared_trunk=true",
        "env.encoder=doubles3",
        "env.num_envs=1",
        "device=cpu",
        "total_steps=32",
        f"hydra.run.dir={tmp_path}",
        "tensorboard=false",
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    ckpt = load_checkpoint(tmp_path)
    assert ckpt["global_step"] == 32 and snapshot_encoder(ckpt) == "doubles3"
    assert ckpt["policy"]["model"]["kind"] == "attention"
    assert ckpt["policy"]["model"]["action_head"] == "pair"


@pytest.mark.timeout(300)
def test_doubles_checkpoint_evaluates_with_play_quality(doubles_run: Path, tmp_path: Path) -> None:
    document = evaluate_json(
        tmp_path,
        f"checkpoint={doubles_run}",
        "battles=2",
        "num_envs=1",
        "opponents=[random,heuristic]",
        "mask_futile=true",  # judged per slot in doubles (tests/mapleenv/test_mask_futile.py)
    )
    assert document["battle_format"] == "gen9randomdoublesbattle"
    assert document["mask_futile"] is True
    for name in ("random", "heuristic"):
        result = document["opponents"][name]
        assert result["battles"] == 2 and 0 <= result["ci_low"] <= result["ci_high"] <= 1
        quality = result["quality"]
        # both slots act each turn: more moves and switches than turns
        agent = quality["agent"]
        assert agent["moves"] + agent["switches"] > quality["turns"] > 0


@pytest.mark.timeout(300)
def test_doubles_checkpoint_plays_live(doubles_run: Path, tmp_path: Path) -> None:
    """``trainer.play`` in gen9randomdoublesbattle (the checkpoint's format) on its local
    server: a poke-env RandomPlayer challenges it; the battle ends, both sides agree on it.
    (The other modes do not depend on the game: tests/trainer/apps/test_play.py.)"""
    name = f"mapled{os.getpid()}"[:18]
    lines: queue.Queue[str] = queue.Queue()
    agent = subprocess.Popen(
        [sys.executable, "-m", "trainer.play", f"checkpoint={doubles_run}", "server=local"]
        + ["mode=accept", "battles=1", f"username={name}", f"hydra.run.dir={tmp_path}"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert agent.stderr is not None
    threading.Thread(target=lambda: [lines.put(x) for x in agent.stderr], daemon=True).start()
    try:
        port = int(_wait_for(lines, r"open http://localhost:(\d+) in a browser").group(1))
        _wait_for(lines, r"ready: logged in as ")
        challenger = RandomPlayer(
            account_configuration=AccountConfiguration(f"chald{os.getpid()}"[:18], None),
            server_configuration=ServerConfiguration(
                f"ws://127.0.0.1:{port}/showdown/websocket",
                "https://play.pokemonshowdown.com/action.php?",
            ),
            battle_format="gen9randomdoublesbattle",
            log_level=logging.ERROR,
        )
        play = challenger.send_challenges(name.lower(), 1)
        asyncio.run(asyncio.wait_for(play, timeout=200))
        assert agent.wait(timeout=60) == 0
    finally:
        if agent.poll() is None:
            os.killpg(agent.pid, signal.SIGKILL)
            agent.wait(timeout=30)
    (battle,) = challenger.battles.values()
    assert battle.finished and battle.turn > 0
    assert "doubles" in battle.battle_tag
    (entry,) = json.loads((tmp_path / "play.json").read_text())["battles"]
    assert entry["turns"] == battle.turn
    assert entry["result"] == {True: "lost", False: "won"}.get(battle.won, "tie")


def _wait_for(lines: queue.Queue[str], pattern: str, timeout: float = 180) -> re.Match[str]:
    """The first line of ``lines`` matching ``pattern`` within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        seen.append(line)
        if match := re.search(pattern, line):
            return match
    raise AssertionError(f"no line matching {pattern!r}:\n" + "\n".join(seen[-20:]))


def test_evaluate_policy_refuses_a_policy_of_the_other_game(doubles_run: Path) -> None:
    """The Python API too: one line before any env worker starts."""
    policy = policy_from_snapshot(load_checkpoint(doubles_run))
    with pytest.raises(ValueError, match="encoder 'doubles' reads doubles battles"):
        evaluate_policy(policy, EnvSpec(encoder="doubles").checked(), ["random"], 1)
    with pytest.raises(ValueError, match=r"the policy has 2209 actions and 'gen9randombattle'"):
        evaluate_policy(policy, EnvSpec(encoder="simple").checked(), ["random"], 1)


def _compose(config: str, *overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose(config, overrides=list(overrides))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ((DOUBLES, "env.encoder=simple"), "encoder 'simple' reads singles battles"),
        (("env.encoder=doubles",), "encoder 'doubles' reads doubles battles"),
        ((DOUBLES, "env.encoder=doubles", "model=attention"), "model=attention reads"),
        ((DOUBLES, "env.encoder=doubles", "env.opponent=calc"), "'calc' plays singles only"),
        ((DOUBLES, "env.encoder=doubles", "env.teacher=calc"), "'calc' plays singles only"),
        (
            (DOUBLES, "env.encoder=doubles", f"env.opponent=policy:{SINGLES}"),
            "is a singles policy (encoder 'rich2', 26 actions) and "
            "'gen9randomdoublesbattle' is a doubles format",
        ),
    ],
)
def test_training_settings_of_the_other_game_are_refused(
    overrides: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as info:
        to_train_config(_compose("config", "+experiment=smoke", *overrides))
    assert "\n" not in str(info.value)


def _refused(preflight, config, capsys: pytest.CaptureFixture[str]) -> str:
    """The one error line and exit code 2 of a preflight."""
    with pytest.raises(SystemExit) as info:
        preflight.on_run_start(config)
    assert info.value.code == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 1 and "[ERROR]" in errors[0]
    return errors[0]


def test_checkpoints_of_the_other_game_are_refused(
    doubles_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A doubles checkpoint on singles (evaluate, play, resume, a policy: opponent) and a
    singles one on doubles: one line naming both games."""
    doubles_ckpt = doubles_run / "checkpoints" / "last.pt"
    cases = [
        (
            EvaluatePreflight(),
            ("evaluate", f"checkpoint={doubles_ckpt}", "battle_format=gen9randombattle"),
        ),
        (PlayPreflight(), ("play", f"checkpoint={doubles_ckpt}", "battle_format=gen9randombattle")),
        (TrainPreflight(), ("config", "+experiment=smoke", f"resume={doubles_ckpt}")),
        (TrainPreflight(), ("config", "+experiment=smoke", f"env.opponent=policy:{doubles_ckpt}")),
    ]
    for preflight, (config, *overrides) in cases:
        line = _refused(preflight, _compose(config, *overrides), capsys)
        assert "is a doubles policy (encoder 'doubles_basic', 2209 actions)" in line, line
        assert "'gen9randombattle' is a singles format" in line, line
    singles_on_doubles = _compose(
        "evaluate", f"checkpoint={SINGLES}", "battle_format=gen9randomdoublesbattle"
    )
    line = _refused(EvaluatePreflight(), singles_on_doubles, capsys)
    assert "is a singles policy" in line and "is a doubles format" in line


@pytest.mark.parametrize(
    ("config", "overrides", "message"),
    [
        ("evaluate", ("opponents=[calc]",), "'calc' plays singles only"),
        ("evaluate", ("search.enabled=true",), "search.enabled reads singles battles"),
        ("play", ("search.enabled=true",), "search.enabled reads singles battles"),
    ],
)
def test_singles_only_evaluate_and_play_settings_on_doubles(
    doubles_run: Path,
    capsys: pytest.CaptureFixture[str],
    config: str,
    overrides: tuple[str, ...],
    message: str,
) -> None:
    preflight = EvaluatePreflight() if config == "evaluate" else PlayPreflight()
    line = _refused(preflight, _compose(config, f"checkpoint={doubles_run}", *overrides), capsys)
    assert message in line and "'gen9randomdoublesbattle'" in line
