"""Checks of a composed config that run before Hydra creates the run dir (a Hydra
``on_run_start`` callback, named in ``conf/config.yaml``): bad input, a ``resume=`` that
is not a Maple checkpoint, more envs than the machine holds stop with one line and exit
code 2, and nothing is written (no run dir, no ``.hydra/``, no log)."""

from __future__ import annotations

from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, open_dict

from trainer.cli_errors import fail


def _task_config(config: DictConfig) -> DictConfig:
    task = config.copy()
    with open_dict(task):
        task.pop("hydra", None)
    return task


class TrainPreflight(Callback):
    """``python -m trainer``: the config checks (:func:`trainer.config.to_train_config`)
    and the ``resume`` checkpoint, before the run dir exists."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        from trainer.config import ConfigError, to_train_config
        from trainer.run.checkpoint import CheckpointError, load_checkpoint

        try:
            typed = to_train_config(_task_config(config))
            if typed.resume:
                load_checkpoint(typed.resume)  # a run dir or a file that must be a checkpoint
        except (ConfigError, CheckpointError, FileNotFoundError) as exc:
            fail(str(exc))


class PlayPreflight(Callback):
    """``python -m trainer.play``: the settings, the checkpoint, the format and team, the
    password source, before the run dir (``play.log``) exists."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        from omegaconf import OmegaConf
        from omegaconf.errors import OmegaConfBaseException

        from mapleenv.showdown import ShowdownError
        from trainer.apps.live import battle_setup, resolve_password
        from trainer.apps.play import validate
        from trainer.run.checkpoint import load_checkpoint

        try:
            cfg = OmegaConf.to_object(_task_config(config))
            validate(cfg)
            battle_setup(cfg, load_checkpoint(cfg.checkpoint))
            resolve_password(cfg)
        except (FileNotFoundError, ValueError, ShowdownError, OmegaConfBaseException) as exc:
            fail(str(exc), logger="trainer.play")


class EvaluatePreflight(Callback):
    """``python -m trainer.evaluate``: the settings' types, the checkpoint (the safe loader)
    and every ``policy:`` opponent's file, before the run dir exists."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        from omegaconf import OmegaConf
        from omegaconf.errors import OmegaConfBaseException

        from mapleenv.opponents import check_policy_files
        from trainer.run.checkpoint import load_checkpoint

        try:
            cfg = OmegaConf.to_object(_task_config(config))
            load_checkpoint(cfg.checkpoint)
            for name in cfg.opponents:
                check_policy_files(name)
        except (FileNotFoundError, ValueError, OmegaConfBaseException) as exc:
            fail(str(exc), logger="trainer.apps.evaluate")
