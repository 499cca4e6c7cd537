"""Builders the tests share: a tiny checkpoint file, battles from protocol lines, a CLI run."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import torch
from poke_env.battle import Battle
from poke_env.data.normalize import to_id_str
from warm_cli import run_python

from mapleenv.encoders import make_encoder
from mapleenv.encoders.features import dex
from mapleenv.policies import ModelConfig, build_policy, policy_spec
from trainer.run.checkpoint import save_checkpoint

ROOT = Path(__file__).resolve().parents[1]


def run_module(
    module: str, *args: str, timeout: float = 280, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``python -m <module> <args>`` with this interpreter from the repository root; output
    captured as text (forked warm: tests/warm_cli.py)."""
    return run_python(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def evaluate_json(out_dir: Path, *overrides: str) -> dict:
    """``python -m trainer.evaluate <overrides>``, its JSON and Hydra dir under ``out_dir``:
    the evaluation document, once the command has succeeded."""
    output = out_dir / "eval.json"
    proc = run_module(
        "trainer.evaluate", *overrides, f"output={output}", f"hydra.run.dir={out_dir / 'eval'}"
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return json.loads(output.read_text())


# A gen9ou team member for futile-move tests: Snorlax at full HP and awake, so Rest and Sleep
# Talk surely fail on its first turn; its action indices (moves 6-9, terastallizing 16 + move)
RESTING_SNORLAX = """Snorlax @ Leftovers
Ability: Thick Fat
Tera Type: Ghost
EVs: 252 HP / 252 Atk / 4 SpD
Adamant Nature
- Rest
- Sleep Talk
- Body Slam
- Earthquake
"""
REST, SLEEP_TALK, BODY_SLAM, TERA = 6, 7, 8, 16


def write_tiny_checkpoint(path: Path, seed: int = 0, kind: str = "lstm") -> Path:
    """A freshly initialised tiny policy saved like the trainer saves its checkpoints."""
    torch.manual_seed(seed)
    encoder = make_encoder("simple")
    policy = build_policy(
        encoder.size, 26, ModelConfig(kind=kind, encoder_sizes=[32], hidden_size=16)
    )
    return save_checkpoint(
        path,
        {
            "model": policy.state_dict(),
            "policy": policy_spec(policy),
            "global_step": 0,
            "iteration": 0,
            "config": {"env": {"encoder": "simple", "battle_format": "gen9randombattle"}},
        },
    )


def own_mon(
    name: str,
    moves: tuple[str, ...] = ("tackle",),
    level: int = 80,
    hp: float = 1.0,
    item: str = "leftovers",
    ability: str = "pressure",
    tera: str = "Normal",
    active: bool = False,
    fainted: bool = False,
) -> dict:
    """One entry of a request's ``side.pokemon`` (stats as random battles build them)."""
    stats = dex.estimated_stats(9, to_id_str(name), level)
    current = round(stats["hp"] * hp)
    return {
        "ident": f"p1: {name}",
        "details": f"{name}, L{level}",
        "condition": "0 fnt" if fainted else f"{current}/{stats['hp']}",
        "active": active,
        "stats": {k: v for k, v in stats.items() if k != "hp"},
        "moves": list(moves),
        "baseAbility": ability,
        "item": item,
        "pokeball": "pokeball",
        "ability": ability,
        "commanding": False,
        "reviving": False,
        "teraType": tera,
        "terastallized": "",
    }


def make_battle(
    own: list[dict],
    opponents: list[tuple[str, int, int]],
    events: tuple[str, ...] = (),
    turn: int = 1,
    disabled: tuple[str, ...] = (),
) -> Battle:
    """A gen 9 battle from our side (p1): our active switched in, then each opponent
    ``(name, level, hp%)`` switched in (the last stays active), then ``events``
    (protocol lines such as ``|-weather|RainDance``), then our request."""
    battle = Battle("battle-gen9randombattle-1", "me", logging.getLogger("test"), gen=9)
    battle.parse_message(["", "player", "p1", "me", "", ""])
    battle.parse_message(["", "player", "p2", "them", "", ""])
    active = next(m for m in own if m["active"])
    battle.parse_message(
        ["", "switch", "p1a: " + active["ident"][4:], active["details"], active["condition"]]
    )
    for name, level, hp in opponents:
        battle.parse_message(["", "switch", f"p2a: {name}", f"{name}, L{level}", f"{hp}/100"])
    for line in events:
        battle.parse_message(line.split("|"))
    moves = [
        {"move": m, "id": m, "pp": 16, "maxpp": 16, "target": "normal", "disabled": m in disabled}
        for m in active["moves"]
    ]
    battle.parse_request(
        {
            "active": [{"moves": moves, "canTerastallize": active["teraType"]}],
            "side": {"name": "me", "id": "p1", "pokemon": own},
            "rqid": 1,
        }
    )
    battle.end_turn(turn)
    return battle


def write_illegal_team(path: Path) -> Path:
    """A gen9ou team file the simulator's validator refuses (a move that does not exist):
    a command given it passes its preflight, which reads only the file's kind, and stops
    once the simulator validates it, with logging set up and its run dir written."""
    path.write_text("Pikachu @ Light Ball\nAbility: Static\n- Notamove\n")
    return path
