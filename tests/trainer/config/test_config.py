"""Hydra configs: experiments compose, typed schemas reject wrong keys/types/values."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from warm_cli import run_python

from trainer.__main__ import CONF_DIR
from trainer.config import (
    ConfigError,
    GymEnvConfig,
    ShowdownEnvConfig,
    TrainConfig,
    to_train_config,
)

ROOT = Path(__file__).resolve().parents[3]


def compose_cfg(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("config", overrides=list(overrides))


@pytest.mark.parametrize(
    "experiment", sorted(p.stem for p in Path(CONF_DIR, "experiment").glob("*.yaml"))
)
@pytest.mark.integration  # node lists the simulator's formats
def test_every_experiment_composes_and_validates(experiment: str) -> None:
    cfg = to_train_config(compose_cfg(f"+experiment={experiment}"))
    assert isinstance(cfg, TrainConfig)
    assert cfg.name == experiment


@pytest.mark.integration  # node lists the simulator's formats
def test_defaults_are_showdown_lstm_ppo() -> None:
    cfg = to_train_config(compose_cfg())
    assert isinstance(cfg.env, ShowdownEnvConfig) and cfg.env.opponent == "random"
    assert cfg.model.kind == "lstm" and cfg.algo.bptt > 0


def test_gym_env_with_the_lstm_experiment() -> None:
    cfg = to_train_config(compose_cfg("env=gym", "env.id=CartPole-v1", "+experiment=lstm_ppo"))
    assert isinstance(cfg.env, GymEnvConfig) and cfg.env.id == "CartPole-v1"
    assert cfg.model.kind == "lstm" and cfg.env.num_envs == 12


@pytest.mark.integration  # node lists the simulator's formats
def test_smoke_is_one_showdown_env_on_cpu() -> None:
    cfg = to_train_config(compose_cfg("+experiment=smoke"))
    assert isinstance(cfg.env, ShowdownEnvConfig)
    assert cfg.env.num_envs == 1 and cfg.device == "cpu"
    assert cfg.total_steps <= 4 * cfg.algo.rollout_steps


@pytest.mark.integration  # node lists the simulator's formats
def test_opponent_may_be_a_mix() -> None:
    cfg = to_train_config(compose_cfg("env.opponent={random: 0.5, max_power: 0.5}"))
    assert dict(cfg.env.opponent) == {"random": 0.5, "max_power": 0.5}


def test_unknown_key_fails_with_its_name() -> None:
    with pytest.raises(ConfigCompositionException, match="algo.lrr"):
        compose_cfg("algo.lrr=1")
    with pytest.raises(ConfigError, match="algo.lrr"):
        to_train_config(compose_cfg("+algo.lrr=1"))
    with pytest.raises(ConfigCompositionException, match="env.battle_format"):
        compose_cfg("env=gym", "env.battle_format=gen9ou")


def test_wrong_type_fails() -> None:
    with pytest.raises(ConfigCompositionException, match="algo.lr"):
        compose_cfg("algo.lr=fast")
    with pytest.raises(ConfigCompositionException, match="env.num_envs"):
        compose_cfg("env.num_envs=many")


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("device=gpu", "device must be"),
        ("algo.bptt=-1", "bptt"),
        ("model.kind=gru", "model.kind"),
        ("env.num_envs=0", "num_envs"),
        ("algo.bptt=129", r"algo.bptt \(129\) must be <= algo.rollout_steps \(128\)"),
        ("max_minutes=0", "max_minutes must be > 0"),
        ("algo.bc_steps=1000", "bc_steps > 0 needs algo.kickstart_coef"),
        ("model.token_size=30", "token_size must be a multiple of model.attention_heads"),
        ("env.battles_per_worker=3", "battles_per_worker must be >= 1 and divide env.num_envs"),
        ("env.battles_per_worker=0", "battles_per_worker must be >= 1 and divide env.num_envs"),
        ("model.action_head=joint", "model.action_head must be auto|flat|pair"),
        ("model.pair_rank=-1", "model.pair_rank must be >= 0"),
    ],
)
@pytest.mark.integration  # node lists the simulator's formats
def test_bad_values_fail_clearly(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        to_train_config(compose_cfg(override))


@pytest.mark.integration  # node lists the simulator's formats
def test_attention_without_its_shared_trunk_is_one_line() -> None:
    with pytest.raises(ConfigError, match="model.kind=attention has one trunk"):
        to_train_config(compose_cfg("model=attention", "model.shared_trunk=false"))


@pytest.mark.integration  # node lists the simulator's formats
def test_aux_coef_turns_on_the_env_target() -> None:
    """One key for the loss: the env's opponent_action target follows algo.aux_coef."""
    assert not to_train_config(compose_cfg()).env.opponent_action_target
    cfg = to_train_config(compose_cfg("algo.aux_coef=0.5", "model.aux_classes=4"))
    assert cfg.env.opponent_action_target and cfg.algo.aux_coef == 0.5
    with pytest.raises(ConfigError, match="aux_coef > 0 needs model.aux_classes > 0"):
        to_train_config(compose_cfg("algo.aux_coef=0.5"))
    with pytest.raises(ConfigError, match="aux_coef > 0 needs algo=ppo"):
        to_train_config(compose_cfg("algo=reinforce", "algo.aux_coef=0.5", "model.aux_classes=4"))


@pytest.mark.integration
def test_cli_rejects_a_bad_key_before_starting(tmp_path: Path) -> None:
    proc = run_python(
        [sys.executable, "-m", "trainer", "+algo.lrr=1", f"hydra.run.dir={tmp_path}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "unknown config key(s): algo.lrr" in proc.stderr and proc.stdout == ""  # preflight
    assert not (tmp_path / "metrics.csv").exists()


@pytest.mark.integration  # node lists the simulator's formats
def test_ray_vectorization_settings_compose() -> None:
    cfg = to_train_config(compose_cfg("env.vectorization=ray", "env.ray.shards=4"))
    assert cfg.env.vectorization == "ray" and cfg.env.ray.shards == 4
    with pytest.raises(ConfigCompositionException) as bad:  # typed by its enum
        compose_cfg("env.vectorization=threads")
    assert "expected one of [async, ray]" in str(bad.value.__cause__)
    with pytest.raises(ConfigError, match="battles_per_worker > 1 needs env.vectorization=async"):
        to_train_config(compose_cfg("env.vectorization=ray", "env.battles_per_worker=2"))


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("env.battle_format=gen9nonsense", "unknown battle format 'gen9nonsense'; closest: gen9"),
        ("env.battle_format=gen9ou", "'gen9ou' needs a team for each player"),
    ],
)
@pytest.mark.integration  # node lists the simulator's formats
def test_bad_battle_formats_fail_at_start(override: str, message: str) -> None:
    """Checked against the pinned simulator's own format list before anything starts."""
    with pytest.raises(ConfigError, match=message):
        to_train_config(compose_cfg(override))
    to_train_config(compose_cfg("env.battle_format=gen8randombattle"))  # a known one passes


@pytest.mark.integration  # node lists the simulator's formats
def test_the_env_refuses_an_unknown_format_before_starting_a_simulator() -> None:
    from mapleenv.env import PokemonEnv

    with pytest.raises(ValueError, match="unknown battle format 'gen9randombatle'; closest"):
        PokemonEnv("gen9randombatle", backend="direct")


@pytest.mark.integration  # node lists the simulator's formats
def test_mask_futile_is_an_env_key_and_an_evaluate_and_play_override() -> None:
    """``env.mask_futile`` reaches the env spec by name; evaluate and play may turn it on
    or off for a checkpoint (``mask_futile=``), else follow its run's setting."""
    import dataclasses

    from omegaconf import OmegaConf

    from mapleenv.spec import EnvSpec
    from trainer.config import checkpoint_mask_futile

    assert not to_train_config(compose_cfg()).env.mask_futile
    assert to_train_config(compose_cfg("env.mask_futile=true")).env.mask_futile is True
    assert "mask_futile" in {f.name for f in dataclasses.fields(EnvSpec)}
    with pytest.raises(ConfigCompositionException):
        compose_cfg("env.mask_futile=maybe")
    for app in ("evaluate", "play"):
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            raw = compose(app, overrides=["checkpoint=run.pt", "mask_futile=true"])
            default = compose(app, overrides=["checkpoint=run.pt"])
        assert OmegaConf.to_object(raw).mask_futile is True
        assert OmegaConf.to_object(default).mask_futile is None
    trained_masked = {"config": {"env": {"mask_futile": True}}}
    assert checkpoint_mask_futile(None, {"config": {"env": {}}}) is False  # before the key
    assert checkpoint_mask_futile(None, trained_masked) is True
    assert checkpoint_mask_futile(False, trained_masked) is False
    assert checkpoint_mask_futile(True, {}) is True


@pytest.mark.parametrize(
    ("overrides", "encoder"),
    [
        ([], "singles_basic"),
        (["env.battle_format=gen9randomdoublesbattle"], "doubles_basic"),
        (["env.battle_format=gen9vgc2025regi"], "doubles_basic"),
        (["env.battle_format=gen9randomdoublesbattle", "env.encoder=doubles3"], "doubles3"),
        (["env.encoder=rich2"], "rich2"),
        (["model=attention"], "singles_sets"),  # what the model reads
        (["model=attention", "env.battle_format=gen9randomdoublesbattle"], "doubles_entities"),
        (["model=attention", "env.encoder=rich"], "rich"),
    ],
)
def test_env_encoder_defaults_to_the_formats_own(overrides: list[str], encoder: str) -> None:
    """A singles experiment's command trains doubles when the format says doubles (issue
    32's new-user try) and the attention policy when the model says so; a named encoder
    stays; the composed value is a concrete name."""
    cfg = compose_cfg("+experiment=smoke", *overrides)
    assert cfg.env.encoder == encoder


@pytest.mark.integration  # node lists the simulator's formats
@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["selfplay.pool_size=0"], "selfplay.pool_size must be >= 1, got 0"),
        (["selfplay.every=0"], "selfplay.every must be >= 1, got 0"),
        (["selfplay.archive_every=0"], "selfplay.archive_every >= 1"),
        (["env.vectorization=ray"], "env.num_envs (1) must be >= env.ray.shards (2, >= 1)"),
        (["eval.every=-1"], "eval.every must be >= 0 (0 = off), got -1"),
        (["eval.every=1", "eval.battles=0"], "eval.battles must be >= 1, got 0"),
        (["eval.every=1", "eval.num_envs=0"], "eval.num_envs must be >= 1, got 0"),
        (["eval.every=1", "eval.opponents=[]"], "eval.opponents: none given"),
        (["eval.every=1", "eval.opponents=[nobody]"], "eval.opponents: unknown opponent 'nobody'"),
        (["eval.every=1", "eval.opponents=[self]"], "eval.opponents: opponent 'self'"),
        (["eval.every=0", "eval.battles=0"], None),  # off: its settings are not read
    ],
)
def test_values_the_run_would_fail_on_are_refused_at_start(overrides, message) -> None:
    """Each of these used to start the run (its run dir made) and stop with a traceback."""
    if message is None:
        to_train_config(compose_cfg("+experiment=smoke", *overrides))
        return
    with pytest.raises(ConfigError, match=re.escape(message)):
        to_train_config(compose_cfg("+experiment=smoke", *overrides))


def test_an_unregistered_gym_id_is_refused_at_start() -> None:
    with pytest.raises(ConfigError, match="env.id 'NoSuchEnv-v0' is not a registered Gymnasium"):
        to_train_config(compose_cfg("env=gym", "env.id=NoSuchEnv-v0", "+experiment=lstm_ppo"))


def test_a_device_this_machine_lacks_is_one_line() -> None:
    import torch

    from trainer.preflight import check_device

    check_device("cpu")
    check_device("auto")
    if torch.cuda.is_available():
        check_device("cuda")
    else:
        with pytest.raises(ValueError, match="device=cuda requested but CUDA is not available"):
            check_device("cuda")
