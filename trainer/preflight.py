"""Checks of a composed config that run before Hydra creates the run dir (a Hydra
``on_run_start`` callback, named in ``conf/config.yaml``): bad input, a ``resume=`` that
is not a Maple checkpoint, more envs than the machine holds stop with one line and exit
code 2, and nothing is written (no run dir, no ``.hydra/``, no log). Any exception in a
check is that one line too: Hydra would only warn about a failing callback and run the job
anyway."""

from __future__ import annotations

from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict

from trainer.cli_errors import fail

MAX_SEED = 2**32 - 1  # what NumPy, torch and poke-env's generators all take


def check_seed(seed: int | None, key: str = "seed") -> None:
    """A seed must be ``None`` or in ``0..2**32-1``: else a ``ValueError`` (one line)."""
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise ValueError(f"{key} must be in 0..{MAX_SEED}, got {seed}")


def check_device(device: str) -> None:
    """``device=cuda``/``mps`` on a machine without one: a ``ValueError`` (one line) before
    anything starts (``auto`` falls back to the CPU, ``cpu`` is always there). Imports torch
    only for those two."""
    if device.split(":")[0] not in ("cuda", "mps"):
        return
    from trainer.run.device import unavailable

    problem = unavailable(device)
    if problem:
        raise ValueError(problem)


def _refuse(exc: BaseException, logger: str) -> None:
    """The one line for an exception in a preflight: its message (and its type, for an
    error no check expected)."""
    from omegaconf.errors import OmegaConfBaseException

    expected = isinstance(exc, ValueError | FileNotFoundError | OmegaConfBaseException)
    fail(str(exc) if expected else f"{type(exc).__name__}: {exc}", logger=logger)


def _task_config(config: DictConfig) -> DictConfig:
    task = config.copy()
    with open_dict(task):
        task.pop("hydra", None)
    return task


_checked: dict[str, Any] = {}  # the task config's YAML -> what TrainPreflight checked


def preflight_checked(config: DictConfig) -> Any:
    """The :class:`~trainer.config.RunConfig` that :class:`TrainPreflight` checked for
    this task ``config`` in this process (once; ``None`` without a preflight, e.g. in a
    sweep's jobs): the run takes it instead of checking its config and spec again."""
    return _checked.pop(OmegaConf.to_yaml(config), None)


class TrainPreflight(Callback):
    """``python -m trainer``: the config checks (:func:`trainer.config.to_run_config`),
    the ``policy:`` opponents' files and the ``resume`` checkpoint, before the run dir
    exists; the run then takes what it checked (:func:`preflight_checked`)."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        from mapleenv.opponents import check_policy_files, check_policy_game, check_search_teacher
        from mapleenv.policies import resolve_checkpoint
        from trainer.config import to_run_config

        try:
            task = _task_config(config)
            checked = to_run_config(task)
            typed = checked.train
            check_device(typed.device)
            opponent = getattr(typed.env, "opponent", None)
            battle_format = getattr(typed.env, "battle_format", None)
            if opponent is not None:  # policy:<file> members: the full checkpoint check
                check_policy_files(opponent, battle_format)
            teacher = getattr(typed.env, "search_teacher", None)
            if teacher is not None and battle_format is not None:  # the engine, the prior
                check_search_teacher(teacher, battle_format)
            if typed.init_from and not typed.resume:  # missing: one line before the run dir
                resolve_checkpoint(typed.init_from)
            _check_run_dir(config, typed.resume)  # links, special files, a bad metrics.csv
            if typed.resume:  # a run dir or a file: a checkpoint whose networks all fit
                resolve_checkpoint(typed.resume)  # missing: one line before torch loads
                from trainer.run.checkpoint import check_network, check_pool, load_checkpoint

                ckpt = load_checkpoint(typed.resume)
                check_network(ckpt, str(typed.resume))
                check_pool(ckpt, str(typed.resume))
                if battle_format is not None:  # trained on the same game (singles/doubles)
                    check_policy_game(ckpt, battle_format, f"resume={typed.resume}")
        except Exception as exc:
            _refuse(exc, "trainer")
        _checked.clear()
        _checked[OmegaConf.to_yaml(task)] = checked


class PlayPreflight(Callback):
    """``python -m trainer.play``: the settings, the checkpoint, the format and team, the
    password source, before the run dir (``play.log``) exists."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        from omegaconf import OmegaConf

        from mapleenv.paths import check_writable
        from mapleenv.plugins import import_plugins
        from mapleenv.showdown import ShowdownError
        from trainer.apps.live import battle_setup, resolve_password
        from trainer.apps.play import validate

        try:
            cfg = OmegaConf.to_object(_task_config(config))
            validate(cfg)
            check_seed(cfg.seed)
            _check_run_dir(config)
            if cfg.output:
                check_writable(cfg.output)
            import_plugins(cfg.plugins)  # the user's own: the checkpoint's encoder may need one
            checkpoint = _read_checkpoint(cfg.checkpoint)
            battle_format, _ = battle_setup(cfg, checkpoint)
            _check_game(cfg, checkpoint, battle_format)
            resolve_password(cfg)
        except ShowdownError as exc:
            fail(str(exc), logger="trainer.play")
        except Exception as exc:
            _refuse(exc, "trainer.play")


class EvaluatePreflight(Callback):
    """``python -m trainer.evaluate``: the settings' types, the checkpoint (the safe loader)
    and every ``policy:`` opponent's file, before the run dir exists."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        from omegaconf import OmegaConf

        from mapleenv.opponents import check_policy_files
        from mapleenv.paths import check_writable
        from mapleenv.plugins import import_plugins
        from mapleenv.showdown import ShowdownError
        from trainer.config import check_evaluation, checkpoint_battle_format

        try:
            cfg = OmegaConf.to_object(_task_config(config))
            check_seed(cfg.seed)
            check_device(cfg.device)
            _check_run_dir(config)
            if cfg.output:
                check_writable(cfg.output)
                if cfg.save_replays:  # replays/ beside it
                    _check_replay_dir(cfg.output)
            import_plugins(cfg.plugins)  # the user's own: the checkpoint's encoder may need one
            check_evaluation(list(cfg.opponents), cfg.battles, cfg.num_envs)
            checkpoint = _read_checkpoint(cfg.checkpoint)
            battle_format = checkpoint_battle_format(cfg.battle_format, checkpoint)
            for name in cfg.opponents:
                check_policy_files(name, battle_format)
            _check_game(cfg, checkpoint, battle_format)
            _check_env_values(cfg, checkpoint, battle_format)
            _check_team_folders(cfg, checkpoint)
        except ShowdownError as exc:  # server_url: nothing answers there
            fail(str(exc), logger="trainer.apps.evaluate")
        except Exception as exc:
            _refuse(exc, "trainer.apps.evaluate")


def _check_run_dir(config: DictConfig, resume: Any = None) -> None:
    """The folder the run will write into (the resumed run's, or Hydra's run dir when it
    exists already: ``hydra.run.dir=<folder>``) holds no link or special file and, for a
    run, no ``metrics.csv`` it cannot resume with: else one ``ValueError`` line."""
    from pathlib import Path

    from omegaconf import OmegaConf

    from trainer.run.folder import check_run_folder

    if resume:
        if not Path(str(resume)).expanduser().exists():
            return  # refused as missing by its own check, before torch is imported
        from mapleenv.policies import resolve_checkpoint
        from trainer.run.checkpoint import run_dir_of

        check_run_folder(run_dir_of(resolve_checkpoint(resume)), key="resume")
        return
    folder = OmegaConf.select(config, "hydra.run.dir", default=None)
    if folder and Path(folder).exists():
        check_run_folder(folder, key="hydra.run.dir")


def _check_replay_dir(output: Any) -> None:
    from pathlib import Path

    from mapleenv.files import check_output_folder

    check_output_folder(Path(output).expanduser().absolute().parent / "replays", key="output")


def _read_checkpoint(path: Any) -> dict[str, Any]:
    """The full checkpoint check (the safe loader, the policy spec, the encoder); a missing
    file is refused before torch is imported (the loader needs it)."""
    from mapleenv.policies import resolve_checkpoint

    resolve_checkpoint(path)
    from mapleenv.policies import read_snapshot

    return read_snapshot(path)


def _checkpoint_env(checkpoint: dict[str, Any]) -> dict[str, Any]:
    return (checkpoint.get("config") or {}).get("env") or {}


def _check_game(cfg: Any, checkpoint: dict[str, Any], battle_format: str) -> None:
    """The checkpoint and the settings fit ``battle_format``'s game (singles or doubles):
    else a one-line ``ValueError`` (:func:`trainer.config.games.live_game_problems`)."""
    from trainer.config.games import live_game_problems

    problems = live_game_problems(cfg, checkpoint, battle_format)
    if problems:
        raise ValueError("; ".join(problems))


def _check_env_values(cfg: Any, checkpoint: dict[str, Any], battle_format: str) -> None:
    """The env values the evaluation's battles take (``max_turns``, the checkpoint's when not
    given; ``server_url``), checked by ``EnvSpec``, their one home: a one-line
    ``ValueError``; a ``server_url`` nothing answers at within the env's reconnect time: a
    ``ShowdownError`` (its line)."""
    from mapleenv.showdown import wait_for_server
    from mapleenv.spec import EnvSpec

    max_turns = (
        cfg.max_turns if cfg.max_turns is not None else _checkpoint_env(checkpoint).get("max_turns")
    )
    spec = EnvSpec(battle_format=battle_format, max_turns=max_turns, server=cfg.server_url)
    if cfg.server_url:
        wait_for_server(spec.server, spec.reconnect_timeout)


def _check_team_folders(cfg: Any, checkpoint: dict[str, Any]) -> None:
    """The evaluation's team files or folders are listed and their files' kinds checked
    (a symlink loop, a FIFO: one line now); the simulator validates them when it starts."""
    from pathlib import Path

    from mapleenv.showdown import is_team_text, team_files
    from trainer.config import team_path

    env = _checkpoint_env(checkpoint)
    for key in ("team", "opponent_team"):
        value = team_path(getattr(cfg, key) or env.get(key))
        if value and not is_team_text(value) and Path(value).is_dir():
            team_files(Path(value), key=key)
