"""The trainer's typed Hydra schemas (:mod:`~trainer.config.schema`) and their value checks
(:mod:`~trainer.config.checks`); importing the package registers the schemas."""

from mapleenv.policies import Activation, ModelConfig, ModelKind
from trainer.config.checks import ConfigError, checkpoint_mask_futile, team_path, to_train_config
from trainer.config.schema import (
    DEFAULT_OPPONENTS,
    AlgoConfig,
    AlgoName,
    Backend,
    EnvConfig,
    EvaluateConfig,
    GymEnvConfig,
    GymVectorization,
    PeriodicEvalConfig,
    PlayConfig,
    PPOConfig,
    RayShardConfig,
    ReinforceConfig,
    SelfPlayConfig,
    ShowdownEnvConfig,
    ShowdownVectorization,
    TrainConfig,
    choices,
    is_choice,
    register_configs,
)
from trainer.config.spec_fields import env_spec

__all__ = [
    "DEFAULT_OPPONENTS",
    "Activation",
    "AlgoConfig",
    "AlgoName",
    "Backend",
    "ConfigError",
    "EnvConfig",
    "EvaluateConfig",
    "GymEnvConfig",
    "GymVectorization",
    "ModelConfig",
    "ModelKind",
    "PPOConfig",
    "PeriodicEvalConfig",
    "PlayConfig",
    "RayShardConfig",
    "ReinforceConfig",
    "SelfPlayConfig",
    "ShowdownEnvConfig",
    "ShowdownVectorization",
    "TrainConfig",
    "checkpoint_mask_futile",
    "choices",
    "env_spec",
    "is_choice",
    "register_configs",
    "team_path",
    "to_train_config",
]
