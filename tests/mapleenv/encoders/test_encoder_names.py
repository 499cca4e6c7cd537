"""Encoder names: the names before the encoders were grouped by game (``simple``, ``rich``,
``rich2``, ``doubles``, ``doubles2``, ``doubles3``) still build the same encoders, so the
shipped agents (which recorded ``rich2`` and ``doubles3``) and an older checkpoint that
recorded ``simple`` load and check as before."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from builders import write_tiny_checkpoint

from mapleenv.encoders import ALIASES, ENCODERS, encoders_for, make_encoder
from mapleenv.opponents import check_policy_files
from mapleenv.policies import load_checkpoint, policy_from_snapshot, snapshot_encoder
from trainer.config.games import model_encoders

MODELS = Path(__file__).resolve().parents[3] / "models"
SHIPPED = {
    "attention_ppo_gen9random.pt": ("gen9randombattle", "rich2", "singles_sets"),
    "attention_ppo_gen9randomdoubles.pt": (
        "gen9randomdoublesbattle",
        "doubles3",
        "doubles_entities",
    ),
}


@pytest.mark.parametrize(("old", "new"), sorted(ALIASES.items()))
def test_an_old_name_builds_the_encoder_of_its_new_name(old: str, new: str) -> None:
    before, after = make_encoder(old), make_encoder(new)
    assert type(before) is type(after) and before.size == after.size
    np.testing.assert_array_equal(before.low, after.low)
    np.testing.assert_array_equal(before.high, after.high)


def test_the_lists_of_names_say_the_new_names() -> None:
    make_encoder("singles_entities")  # the built-in entity encoders registered
    assert not set(ALIASES) & set(ENCODERS)
    assert encoders_for("singles") == ["singles_basic", "singles_entities", "singles_sets"]
    assert encoders_for("doubles") == ["doubles_basic", "doubles_calc", "doubles_entities"]
    with pytest.raises(ValueError, match="valid: doubles_basic, doubles_calc"):
        make_encoder("nope")


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_a_shipped_agent_loads_by_its_recorded_old_name(name: str) -> None:
    battle_format, old, new = SHIPPED[name]
    ckpt = load_checkpoint(MODELS / name)
    assert snapshot_encoder(ckpt) == old  # what the file recorded, unchanged
    encoder = make_encoder(old)
    assert type(encoder) is type(make_encoder(new))
    assert encoder.size == ckpt["policy"]["obs_dim"]
    assert model_encoders(battle_format, "attention")[0] == new
    check_policy_files(f"policy:{MODELS / name}", battle_format)
    policy = policy_from_snapshot(ckpt)
    hidden = policy.initial_state(1)
    obs = torch.zeros(1, encoder.size)
    mask = torch.ones(1, ckpt["policy"]["n_actions"], dtype=torch.bool)
    logits, value, _ = policy(obs, mask, hidden, torch.ones(1, dtype=torch.bool))
    assert torch.isfinite(logits[mask]).all() and torch.isfinite(value).all()


def test_an_older_checkpoint_that_recorded_simple_loads(tmp_path: Path) -> None:
    ckpt = load_checkpoint(write_tiny_checkpoint(tmp_path / "old.pt"))
    assert snapshot_encoder(ckpt) == "simple"
    assert make_encoder("simple").size == ckpt["policy"]["obs_dim"]
    check_policy_files(f"policy:{tmp_path / 'old.pt'}", "gen9randombattle")
