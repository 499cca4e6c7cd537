"""Training with the engine search as teacher (expert iteration), on real env workers and the
real engine: the run logs the search term, a resumed run keeps the teacher's settings and
counts on from its totals, a missing engine is one line before any worker starts, and
``init_from`` starts a fresh run from a checkpoint's network."""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from trainer.__main__ import CONF_DIR
from trainer.config import ConfigError, to_train_config
from trainer.run.checkpoint import load_checkpoint, resolve_checkpoint
from trainer.run.train import Trainer, train

pytestmark = pytest.mark.integration

TEACHER = [
    "+experiment=smoke",
    "env.search_teacher.share=0.5",
    "env.search_teacher.time_ms=20",
    "algo.search_coef=1.0",
    "tensorboard=false",
    "total_steps=64",
]


def compose_cfg(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("config", overrides=list(overrides))


def make_trainer(run_dir: Path, *extra: str, resume: bool = False) -> Trainer:
    cfg = compose_cfg(*TEACHER, *extra)
    raw = OmegaConf.to_container(cfg, resolve=True)
    resume_from = resolve_checkpoint(str(run_dir)) if resume else None
    return Trainer(to_train_config(cfg), run_dir, raw, resume_from=resume_from)


def rows(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "metrics.csv").open() as f:
        return list(csv.DictReader(f))


@pytest.mark.timeout(400)
def test_a_run_with_the_teacher_logs_the_term_and_resumes_with_its_state(tmp_path: Path) -> None:
    pytest.importorskip("poke_engine", reason="poke-engine is not installed (make setup)")
    first = make_trainer(tmp_path)
    try:
        assert first.adapter.has_search_teacher and first.search.coef == 1.0
        first.run()
        assert (first.buffer.teacher_probs.sum(-1) > 0).any()
    finally:
        first.close()
    logged = rows(tmp_path)
    assert [int(r["global_step"]) for r in logged] == [32, 64]
    for row in logged:
        assert math.isfinite(float(row["search_loss"])) and float(row["search_loss"]) > 0
        assert 0 <= float(row["search_agreement"]) <= 1
        assert float(row["search_decisions"]) > 0 and 0 < float(row["search_rate"]) <= 1
    state = load_checkpoint(tmp_path / "checkpoints" / "last.pt")["search_teacher"]
    assert state["settings"]["share"] == 0.5 and state["settings"]["time_ms"] == 20.0
    searched = state["totals"]["searched"]
    assert searched == sum(float(r["search_decisions"]) for r in logged)

    resumed = make_trainer(tmp_path, "total_steps=96", resume=True)
    try:
        assert resumed.search.settings == state["settings"]
        assert resumed.search.totals == state["totals"]
        resumed.run()
        assert resumed.search.totals["searched"] > searched
    finally:
        resumed.close()
    after = load_checkpoint(tmp_path / "checkpoints" / "last.pt")["search_teacher"]
    assert after["totals"]["searched"] == searched + float(rows(tmp_path)[-1]["search_decisions"])


@pytest.mark.timeout(120)
def test_a_missing_engine_is_one_line_at_start(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "poke_engine", None)  # import poke_engine raises
    with pytest.raises(ConfigError) as caught:
        train(compose_cfg(*TEACHER), tmp_path)
    message = str(caught.value)
    assert "search_teacher.share > 0 needs the engine" in message and "make setup" in message
    assert "\n" not in message
    assert not (tmp_path / "metrics.csv").exists()


@pytest.mark.timeout(120)
def test_the_search_weight_needs_the_teacher(tmp_path: Path) -> None:
    cfg = compose_cfg("+experiment=smoke", "algo.search_coef=1.0", "tensorboard=false")
    with pytest.raises(ValueError, match=r"^algo.search_coef > 0 needs the search teacher"):
        Trainer(to_train_config(cfg), tmp_path, OmegaConf.to_container(cfg, resolve=True))


@pytest.mark.timeout(300)
def test_init_from_starts_a_fresh_run_from_a_checkpoints_network(tmp_path: Path) -> None:
    source = tmp_path / "source"
    plain = ["+experiment=smoke", "tensorboard=false", "total_steps=32"]
    train(compose_cfg(*plain), source)
    weights = load_checkpoint(source / "checkpoints" / "last.pt")["model"]
    cfg = compose_cfg(*plain, f"init_from={source}")
    raw = OmegaConf.to_container(cfg, resolve=True)
    trainer = Trainer(to_train_config(cfg), tmp_path / "tuned", raw)
    try:
        assert trainer.global_step == 0
        for name, value in trainer.policy.state_dict().items():
            torch.testing.assert_close(value.cpu(), weights[name])
    finally:
        trainer.close()
    other = compose_cfg(*plain, f"init_from={source}", "model.hidden_size=16")
    with pytest.raises(ConfigError, match=r"^init_from=.*its network is not this config's"):
        Trainer(to_train_config(other), tmp_path / "other", OmegaConf.to_container(other))
    recoded = compose_cfg(*plain, f"init_from={source}", "env.encoder=singles_entities")
    with pytest.raises(ConfigError, match=r"^init_from=.*reads the singles_basic encoder"):
        Trainer(to_train_config(recoded), tmp_path / "recoded", OmegaConf.to_container(recoded))
