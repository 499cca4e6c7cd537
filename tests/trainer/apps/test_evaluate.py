"""Evaluation: Wilson intervals, the periodic evaluator, the CLI end to end."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import gymnasium
import numpy as np
import pytest
import torch
from builders import write_illegal_team, write_tiny_checkpoint
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from omegaconf import OmegaConf
from warm_cli import run_python

from mapleenv import EnvSpec
from trainer.apps.evaluate import run
from trainer.config import EvaluateConfig, ModelConfig, PeriodicEvalConfig
from trainer.evaluation import (
    OpponentResult,
    PeriodicEvaluator,
    evaluate_policy,
    play_battles,
    wilson_interval,
)
from trainer.policy import build_policy

ROOT = Path(__file__).resolve().parents[3]


def test_wilson_interval_on_hand_worked_numbers():
    # 8/10, z = 1.96: centre (0.8 + 1.92/10) / 1.38416 = 0.71668,
    # half-width 1.96 * sqrt(0.016 + 0.009604) / 1.38416 = 0.22658
    low, high = wilson_interval(8, 10, z=1.96)
    assert low == pytest.approx(0.4901, abs=1e-4) and high == pytest.approx(0.9433, abs=1e-4)
    # 0/10: [0, z^2 / (n + z^2)] = [0, 3.8416 / 13.8416]
    assert wilson_interval(0, 10, z=1.96) == pytest.approx((0.0, 0.27754), abs=1e-5)
    # 10/10 mirrors 0/10
    assert wilson_interval(10, 10, z=1.96) == pytest.approx((1 - 0.27754, 1.0), abs=1e-5)
    # 95% default quantile; 100/200 is symmetric around 0.5
    low, high = wilson_interval(100, 200)
    assert low == pytest.approx(0.43131, abs=1e-4) and low + high == pytest.approx(1.0)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_result_document_keys():
    result = OpponentResult("random", battles=10, wins=8).to_dict()
    assert set(result) >= {"battles", "wins", "win_rate", "ci_low", "ci_high"}
    assert result["win_rate"] == 0.8 and result["ci_low"] < 0.8 < result["ci_high"]


def test_periodic_evaluator_columns_and_schedule(tmp_path):
    env_cfg = OmegaConf.create({"battle_format": "gen9randombattle", "encoder": "simple"})
    off = PeriodicEvaluator(PeriodicEvalConfig(), env_cfg, tmp_path)
    assert off.columns() == [] and not off.due(10)
    on = PeriodicEvaluator(
        PeriodicEvalConfig(every=5, opponents=["random", "heuristic"]), env_cfg, tmp_path
    )
    assert on.columns() == [
        "eval/random/win_rate",
        "eval/random/ci_low",
        "eval/random/ci_high",
        "eval/heuristic/win_rate",
        "eval/heuristic/ci_low",
        "eval/heuristic/ci_high",
    ]
    assert [i for i in range(1, 16) if on.due(i)] == [5, 10, 15]
    assert on.maybe_run(policy=None, iteration=3, global_step=0) == {}  # not due: no battles


def test_bad_evaluations_fail_before_any_battle():
    policy = torch.nn.Linear(1, 1)  # never called: the arguments are checked first
    spec = EnvSpec(server="127.0.0.1:8000").checked()  # an external server: no Node here
    with pytest.raises(ValueError, match="policy:<checkpoint>"):
        evaluate_policy(policy, spec, ["random", "mix:random=1,self=1"], 10)
    with pytest.raises(ValueError, match="battles"):
        evaluate_policy(policy, spec, ["random"], 0)
    with pytest.raises(ValueError, match="no opponents"):
        evaluate_policy(policy, spec, [], 10)


class Scripted(gymnasium.Env):
    """Episodes of ``length`` steps whose outcome is scripted by episode index."""

    observation_space = gymnasium.spaces.Box(0, 1, (1,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, length: int, won: Callable[[int], bool]):
        self.length, self.won, self.episode, self.t = length, won, -1, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode, self.t = self.episode + 1, 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        if self.t < self.length:
            return np.zeros(1, np.float32), 0.0, False, False, {}
        info = {"won": self.won(self.episode), "turns": self.length}
        return np.zeros(1, np.float32), 0.0, True, False, info


def test_each_env_counts_only_its_share_of_the_battles():
    # env 0: 1-step battles won every other time; env 1: 5-step battles, always lost.
    # 5 battles = 3 from env 0 (won, lost, won) + 2 from env 1: 2 wins. Counting the first
    # 5 battles to finish would take env 0's five short ones (3 wins).
    envs = SyncVectorEnv(
        [lambda: Scripted(1, lambda k: k % 2 == 0), lambda: Scripted(5, lambda k: False)],
        autoreset_mode=AutoresetMode.SAME_STEP,
    )
    policy = build_policy(1, 2, ModelConfig(kind="lstm", encoder_sizes=[4], hidden_size=4))
    seen = []
    wins, battles, turns = play_battles(policy, envs, 5, on_battle=seen.append)
    envs.close()
    assert (wins, battles) == (2, 5)
    assert sorted(turns) == [1, 1, 1, 5, 5] and sorted(seen) == [False] * 3 + [True] * 2


def evaluate_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_python(
        [sys.executable, "-m", "trainer.evaluate", *args, f"hydra.run.dir={cwd / 'hydra'}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_missing_checkpoint_fails_clearly(tmp_path):
    with pytest.raises(FileNotFoundError, match="checkpoint not found"):
        run(EvaluateConfig(checkpoint=str(tmp_path / "nope.pt")), tmp_path)


@pytest.mark.integration  # runs the CLI
def test_cli_error_and_logs_are_on_stderr_and_stdout_stays_empty(tmp_path):
    """A bad setting found by the app (after the preflight; logging is set up): the one
    error line and the log lines before it go to stderr and the run's log file
    (conf/hydra/job_logging/maple.yaml); stdout is for results only, so it is empty."""
    checkpoint = write_tiny_checkpoint(tmp_path / "tiny.pt")
    team = write_illegal_team(tmp_path / "team.txt")
    done = evaluate_cli(
        f"checkpoint={checkpoint}", "battle_format=gen9ou", f"team={team}", cwd=tmp_path
    )
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stdout == ""
    errors = [line for line in done.stderr.splitlines() if "][ERROR] - " in line]
    assert len(errors) == 1 and "is not legal in gen9ou" in errors[0], done.stderr[-3000:]
    assert "][INFO] - device: " in done.stderr  # a log line before the error
    assert errors[0] in (tmp_path / "hydra" / "evaluate.log").read_text()


@pytest.mark.integration
@pytest.mark.timeout(700)
def test_cli_end_to_end_writes_table_json_and_replays(showdown_server, tmp_path):
    checkpoint = write_tiny_checkpoint(tmp_path / "tiny.pt")
    output = tmp_path / "out" / "eval.json"
    done = evaluate_cli(
        f"checkpoint={checkpoint}",
        "opponents=[random]",
        "battles=2",
        "num_envs=2",
        "save_replays=true",
        "mask_futile=true",  # the tiny run had it off: the override masks (on the server)
        f"output={output}",
        f"server_url={showdown_server.server_configuration.websocket_url}",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads(output.read_text())
    assert document["policy"] == "sampled" and document["encoder"] == "simple"
    assert document["mask_futile"] is True
    assert list(document["opponents"]) == ["random"]
    for name, result in document["opponents"].items():
        assert result["battles"] == 2
        assert 0 <= result["wins"] <= 2
        assert result["win_rate"] == pytest.approx(result["wins"] / 2)
        low, high = wilson_interval(result["wins"], 2)
        assert (result["ci_low"], result["ci_high"]) == pytest.approx((low, high))
        assert not math.isnan(result["mean_turns"]) and result["mean_turns"] >= 1
        quality = result["quality"]  # play quality of both seats, from the battles' logs
        assert quality["battles"] == 2 and quality["turns"] == pytest.approx(result["mean_turns"])
        for seat in ("agent", "opponent"):
            counts = quality[seat]
            assert counts["moves"] > 0 and counts["switches"] >= 1
            assert 0 <= counts["failed"] + counts["immune"] + counts["missed"] <= counts["moves"]
        assert name in done.stdout
        replays = list((output.parent / "replays" / name).glob("*.html"))
        assert len(replays) >= 2  # every battle played (extras beyond the quota too)
        html = replays[0].read_text()
        assert "<html" in html.lower() or "<!doctype html" in html.lower()
        assert "|turn|1" in html and ("|win|" in html or "|tie" in html)
    assert "95% CI" in done.stdout and "play quality" in done.stdout
    assert (
        done.stdout.rstrip().splitlines()[-1]
        == f"results: {output}; replays: {output.parent / 'replays'}"
    )
    # the log lines (progress, device) are on stderr, not among the results
    assert "][INFO] - " not in done.stdout and "][INFO] - vs random: 2/2 battles" in done.stderr
