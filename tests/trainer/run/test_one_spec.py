"""One spec, checked once: the config step's checked ``EnvSpec`` is handed whole to the
envs, their workers and the evaluations, which trust it; ``EnvSpec.checked`` runs once
per run in this process (env workers are processes of their own: they assert that their
spec is checked). The public constructors check a spec they build, and trust one given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import write_tiny_checkpoint
from hydra import compose, initialize_config_dir
from omegaconf import open_dict

from mapleenv import EnvSpec, PokemonEnv
from trainer.__main__ import CONF_DIR
from trainer.apps.evaluate import run as evaluate
from trainer.config import EvaluateConfig
from trainer.preflight import TrainPreflight, preflight_checked
from trainer.run.train import train

pytestmark = pytest.mark.integration


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[EnvSpec]:
    """Every spec ``EnvSpec.checked`` is called on in this process, in order."""
    seen: list[EnvSpec] = []
    checked = EnvSpec.checked

    def counted(self: EnvSpec, where: str = "") -> EnvSpec:
        seen.append(self)
        return checked(self, where)

    monkeypatch.setattr(EnvSpec, "checked", counted)
    return seen


@pytest.mark.timeout(600)
def test_a_run_with_evaluations_checks_its_spec_once(checks: list[EnvSpec], tmp_path: Path):
    """As ``python -m trainer`` runs: the preflight checks the config before the run dir
    exists, and the run takes what it checked."""
    overrides = ["+experiment=smoke", "tensorboard=false", "eval.every=3", "eval.battles=1"]
    overrides += ["eval.num_envs=1", "eval.opponents=[max_power]", "env.max_turns=5"]
    overrides += [f"hydra.run.dir={tmp_path / 'run'}"]
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        config = compose("config", overrides=overrides, return_hydra_config=True)
    TrainPreflight().on_run_start(config)
    cfg = config.copy()
    with open_dict(cfg):
        del cfg["hydra"]
    row = train(cfg, tmp_path / "run", checked=preflight_checked(cfg))
    assert row is not None and row["global_step"] == 96
    (evaluation,) = [json.loads(line) for line in (tmp_path / "run" / "eval.jsonl").open()]
    assert evaluation["opponents"]["max_power"]["battles"] == 1  # the evaluation path ran
    assert len(checks) == 1  # the config step's; envs, workers, evaluation trusted it


@pytest.mark.timeout(600)
def test_an_evaluation_of_two_opponents_checks_its_spec_once(
    checks: list[EnvSpec], tmp_path: Path
) -> None:
    checkpoint = write_tiny_checkpoint(tmp_path / "tiny.pt")
    cfg = EvaluateConfig(
        checkpoint=str(checkpoint),
        opponents=["random", "max_power"],
        battles=1,
        num_envs=1,
        max_turns=5,
        output=str(tmp_path / "eval.json"),
    )
    document = evaluate(cfg, tmp_path)
    assert [r["battles"] for r in document["opponents"].values()] == [1, 1]
    assert len(checks) == 1


def test_public_constructors_check_what_they_build_and_trust_a_checked_spec(
    checks: list[EnvSpec],
) -> None:
    env = PokemonEnv(backend="direct", max_turns=3)  # loose keywords: built and checked
    try:
        assert len(checks) == 1 and env.env_spec.is_checked
        again = PokemonEnv(spec=env.env_spec)  # a checked spec: as it is
        again.close()
        assert len(checks) == 1
    finally:
        env.close()
