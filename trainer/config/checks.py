"""Value checks of a composed training config: one pass, every problem named.

:func:`to_run_config` turns Hydra's composed ``DictConfig`` into a typed
:class:`~trainer.config.schema.TrainConfig` and the checked ``EnvSpec`` of its ``env.*``
(the one check of the run's env settings; envs and evaluations are built from it), and
raises :class:`ConfigError` naming every unknown key or invalid value, before anything
starts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, NamedTuple

from omegaconf import DictConfig, OmegaConf

from mapleenv.policies import ActionHead, Activation, ModelKind
from mapleenv.spec import EnvSpec
from trainer.config.eval_checks import periodic_eval_problems
from trainer.config.schema import (
    AlgoName,
    Backend,
    EnvConfig,
    GymEnvConfig,
    GymVectorization,
    PPOConfig,
    ShowdownEnvConfig,
    ShowdownVectorization,
    TrainConfig,
    choices,
    is_choice,
)
from trainer.config.spec_fields import env_spec


class ConfigError(ValueError):
    """A config that composes but cannot be trained with (unknown key, bad value)."""


def _unknown_keys(node: Any, path: str) -> list[str]:
    object_type = OmegaConf.get_type(node)
    if not dataclasses.is_dataclass(object_type):
        return []
    fields = {f.name: f for f in dataclasses.fields(object_type)}
    found = []
    for key in node:
        if key not in fields:
            found.append(f"{path}{key}")
        elif OmegaConf.is_dict(node[key]):
            found += _unknown_keys(node[key], f"{path}{key}.")
    return found


class RunConfig(NamedTuple):
    """A checked training config: the typed config and the checked ``EnvSpec`` of its
    ``env.*`` (``None`` for a Gymnasium env, or where this machine has no Node to check it
    with: the env start then says so)."""

    train: TrainConfig
    spec: EnvSpec | None


def to_run_config(cfg: DictConfig) -> RunConfig:
    """Validate a composed config: the typed :class:`TrainConfig` and the checked spec the
    run's envs and evaluations are built from (checked here, once per run).

    Raises :class:`ConfigError` naming every unknown key (e.g. added with ``+key=...``) or
    invalid value.
    """
    unknown = _unknown_keys(cfg, "")
    if unknown:
        raise ConfigError(f"unknown config key(s): {', '.join(unknown)}")
    try:
        obj = OmegaConf.to_object(cfg)
    except Exception as exc:  # omegaconf raises MissingMandatoryValue, ValidationError...
        raise ConfigError(f"invalid config: {exc}") from exc
    assert isinstance(obj, TrainConfig)
    if obj.algo.aux_coef > 0 and isinstance(obj.env, ShowdownEnvConfig):
        obj.env.opponent_action_target = True  # the auxiliary loss's target: one key for both
    problems, spec = _check_values(obj) or _check_capacity(obj.env), None
    if not problems:
        problems, spec = _check_spec(obj.env)
    problems = (
        problems
        or _check_extensions(obj.env)
        or _check_game(obj)
        or periodic_eval_problems(obj.eval, obj.env)
        or _check_gym(obj.env)
    )
    if problems:
        raise ConfigError("invalid config: " + "; ".join(problems))
    return RunConfig(obj, spec)


def to_train_config(cfg: DictConfig) -> TrainConfig:
    """The typed config of :func:`to_run_config` alone (for callers that build no envs
    from it, or leave building its spec to :class:`~trainer.run.train.Trainer`)."""
    return to_run_config(cfg).train


def _check_gym(env: EnvConfig) -> list[str]:
    if not isinstance(env, GymEnvConfig):
        return []
    problem = gym_id_problem(env.id)
    return [problem] if problem else []


def _check_capacity(env: EnvConfig) -> list[str]:
    """The env workers, servers and simulator hosts this config starts, against what this
    machine holds (:func:`mapleenv.limits.check_capacity`; ``env.allow_oversubscribe``
    skips it). Ray shards on a cluster (``env.ray.address``) are not counted here."""
    from mapleenv.limits import CapacityError, check_capacity, cpu_cores

    servers = sim_hosts = 0
    if isinstance(env, ShowdownEnvConfig):
        if env.vectorization == ShowdownVectorization.ray and env.ray.address is not None:
            return []
        if env.backend == Backend.server or (env.backend == Backend.auto and env.server_url):
            servers = 0 if env.server_url else env.servers
        else:
            sim_hosts = env.sim_hosts or min(cpu_cores(), env.num_envs)
    elif env.vectorization != GymVectorization.async_:
        return []  # sync gym envs live in the trainer's own process
    try:
        check_capacity(
            env.num_envs // max(1, getattr(env, "battles_per_worker", 1)),  # worker processes
            servers=servers,
            sim_hosts=sim_hosts,
            allow_oversubscribe=env.allow_oversubscribe,
            what="env.num_envs",
            override="env.allow_oversubscribe=true",
        )
    except CapacityError as exc:
        return [str(exc)]
    return []


def _opponent_names(opponent: Any) -> list[str]:
    if OmegaConf.is_config(opponent):
        opponent = OmegaConf.to_container(opponent)
    return [str(k) for k in opponent] if isinstance(opponent, dict) else [str(opponent)]


def _check_extensions(env: EnvConfig) -> list[str]:
    """Checks that the opponent(s), teacher, encoder and reward function are known, before
    anything starts (``env.plugins``, imported by :func:`_check_spec`, registered theirs)."""
    if not isinstance(env, ShowdownEnvConfig):
        return []
    import importlib

    from mapleenv.encoders import make_encoder
    from mapleenv.opponents import PLUGIN_MODULES, check_opponent_name
    from mapleenv.reward import make_reward

    for module in PLUGIN_MODULES:  # they register policy:, self, mix:
        importlib.import_module(module)
    names = [("env.opponent", n) for n in _opponent_names(env.opponent)]
    names += [("env.teacher", env.teacher)] if env.teacher is not None else []
    for key, name in names:
        try:
            check_opponent_name(name)
        except ValueError as exc:
            return [f"{key}: {exc}"]
    for key, build in (
        ("env.encoder", lambda: make_encoder(env.encoder)),
        ("env.reward_fn", lambda: make_reward(env.reward_fn, env.reward)),
    ):
        try:
            build()
        except Exception as exc:  # a name, a module:factory that fails to import or build
            kind = "" if isinstance(exc, ValueError) else f"{type(exc).__name__}: "
            return [f"{key}: {kind}{' '.join(str(exc).split())}"]
    return []


def _check_game(cfg: TrainConfig) -> list[str]:
    """Singles-only settings on a doubles format and the reverse (:mod:`.games`)."""
    if not isinstance(cfg.env, ShowdownEnvConfig):
        return []
    from trainer.config.games import train_game_problems

    return train_game_problems(cfg.env, cfg.model.kind, cfg.model.action_head)


def _check_spec(env: EnvConfig) -> tuple[list[str], EnvSpec | None]:
    """``env.*`` as the ``EnvSpec`` it becomes, checked by ``EnvSpec`` itself, the one home
    of each env value check: its values (``max_turns``, ``servers``, ``sim_hosts``, a
    singles format, the server URL), then ``EnvSpec.checked`` (plugins imported, the format
    and teams against the pinned simulator's validator, ``policy:`` files read): the
    problems, or the checked spec. Team paths are made absolute first (relative to where
    the command started). Without Node or the simulator package here the env start says
    so later (no spec)."""
    if not isinstance(env, ShowdownEnvConfig):
        return [], None
    from mapleenv.policies import CheckpointError
    from mapleenv.showdown import ShowdownError

    for key in ("team", "opponent_team"):
        setattr(env, key, team_path(getattr(env, key)))
    try:
        spec = env_spec(env)
    except ValueError as exc:
        return [_spec_problem(str(exc), env)], None
    try:
        return [], spec.checked(where="env.")
    except CheckpointError:
        raise  # the CLI's own one line for a refused checkpoint file
    except ValueError as exc:
        return [str(exc)], None
    except ShowdownError:
        return [], None


def _spec_problem(message: str, env: ShowdownEnvConfig) -> str:
    """An ``EnvSpec`` value problem named as the config spells it (``env.max_turns must
    ...``, ``env.server_url: bad server URL ...``)."""
    names = {f.name for f in dataclasses.fields(env)}
    if env.server_url is not None and "server URL" in message:
        return f"env.server_url: {message}"
    first = message.split(" ", 1)[0]
    return f"env.{message}" if first in names else f"env: {message}"


def team_path(value: str | None) -> str | None:
    """A team file or folder setting as an absolute path, relative to the directory the
    command started in (Hydra's original cwd, also with ``hydra.job.chdir=true``); team
    text (a newline or ``|`` in it) stays as it is."""
    if value is None or "\n" in value or "|" in value:
        return value
    from hydra.utils import to_absolute_path

    return to_absolute_path(str(value))


def gym_id_problem(env_id: str) -> str | None:
    """Why ``env.id`` cannot be made (not a registered Gymnasium id), or None."""
    import gymnasium as gym

    import mapleenv  # noqa: F401  (registers mapleenv/* ids, e.g. mapleenv/Memory-v0)

    try:
        gym.spec(env_id)
    except gym.error.Error as exc:
        return f"env.id {env_id!r} is not a registered Gymnasium env: {exc}"
    return None


def checkpoint_mask_futile(value: bool | None, checkpoint: Mapping[str, Any]) -> bool:
    """``mask_futile=`` of evaluate and play: as given, else as the checkpoint's policy was
    trained (:func:`mapleenv.policies.snapshot_mask_futile`; off for runs without it)."""
    from mapleenv.policies import snapshot_mask_futile  # torch: not for the config checks

    if value is not None:
        return bool(value)
    return snapshot_mask_futile(checkpoint)


def checkpoint_battle_format(value: str | None, checkpoint: Mapping[str, Any]) -> str:
    """``battle_format=`` of evaluate and play: as given, else the format the checkpoint's
    run trained on (``gen9randombattle`` for a checkpoint that names none)."""
    env = (checkpoint.get("config") or {}).get("env") or {}
    return value or env.get("battle_format") or "gen9randombattle"


Check = tuple[bool, str]


def _check_values(cfg: TrainConfig) -> list[str]:
    checks = [
        *_run_checks(cfg),
        *_env_checks(cfg.env),
        *_model_checks(cfg),
        *_algo_checks(cfg),
        *_selfplay_checks(cfg),
    ]
    return [msg for ok, msg in checks if not ok]


def _run_checks(cfg: TrainConfig) -> list[Check]:
    return [
        (
            cfg.device in ("auto", "cpu", "mps") or cfg.device.split(":")[0] == "cuda",
            f"device must be auto|cuda|mps|cpu, got {cfg.device!r}",
        ),
        (0 <= cfg.seed <= 2**32 - 1, f"seed must be in 0..{2**32 - 1}, got {cfg.seed}"),
        (cfg.total_steps > 0, "total_steps must be > 0"),
        (cfg.max_minutes is None or cfg.max_minutes > 0, "max_minutes must be > 0 (or null)"),
        (cfg.torch_threads >= 0, "torch_threads must be >= 0"),
        (cfg.torch_update_threads >= 0, "torch_update_threads must be >= 0"),
        (cfg.checkpoint_every >= 0, "checkpoint_every must be >= 0"),
        (cfg.log_every >= 1, "log_every must be >= 1"),
    ]


def _env_checks(e: EnvConfig) -> list[Check]:
    return [
        (e.num_envs >= 1, "env.num_envs must be >= 1"),
        (
            e.step_timeout_s is None or e.step_timeout_s > 0,
            "env.step_timeout_s must be > 0 (or null)",
        ),
        (e.kind in ("showdown", "gym"), f"env.kind must be showdown|gym, got {e.kind!r}"),
        (
            not isinstance(e, ShowdownEnvConfig)
            or (e.battles_per_worker >= 1 and e.num_envs % e.battles_per_worker == 0),
            "env.battles_per_worker must be >= 1 and divide env.num_envs, got "
            f"{getattr(e, 'battles_per_worker', None)!r} for {e.num_envs}",
        ),
        (
            not isinstance(e, ShowdownEnvConfig)
            or e.battles_per_worker == 1
            or e.vectorization == "async",
            "env.battles_per_worker > 1 needs env.vectorization=async",
        ),
        (
            not isinstance(e, ShowdownEnvConfig)
            or e.vectorization != ShowdownVectorization.ray
            or e.num_envs >= e.ray.shards >= 1,
            f"env.num_envs ({e.num_envs}) must be >= env.ray.shards "
            f"({getattr(getattr(e, 'ray', None), 'shards', None)}, >= 1): each shard runs an env",
        ),
        (
            not isinstance(e, GymEnvConfig) or is_choice(e.vectorization, GymVectorization),
            f"env.vectorization must be {choices(GymVectorization)}, "
            f"got {getattr(e, 'vectorization', None)!r}",
        ),
    ]


def _model_checks(cfg: TrainConfig) -> list[Check]:
    m = cfg.model
    return [
        (
            m.token_size >= 1
            and m.attention_layers >= 1
            and m.attention_heads >= 1
            and m.token_size % m.attention_heads == 0,
            "model.token_size must be a multiple of model.attention_heads (both >= 1) "
            "and model.attention_layers >= 1",
        ),
        (is_choice(m.kind, ModelKind), f"model.kind must be {choices(ModelKind)}, got {m.kind!r}"),
        (
            m.kind != ModelKind.attention or m.shared_trunk,
            "model.kind=attention has one trunk: set model.shared_trunk=true",
        ),
        (
            is_choice(m.activation, Activation),
            f"model.activation must be {choices(Activation)}, got {m.activation!r}",
        ),
        (m.hidden_size >= 1 and m.num_layers >= 1, "model.hidden_size and num_layers must be >= 1"),
        (all(s >= 1 for s in [*m.encoder_sizes, *m.head_sizes]), "layer sizes must be >= 1"),
        (m.aux_classes >= 0, "model.aux_classes must be >= 0 (0 = no auxiliary head)"),
        (
            is_choice(m.action_head, ActionHead),
            f"model.action_head must be {choices(ActionHead)}, got {m.action_head!r}",
        ),
        (m.pair_rank >= 0, f"model.pair_rank must be >= 0 (0 = no pair term), got {m.pair_rank}"),
    ]


def _algo_checks(cfg: TrainConfig) -> list[Check]:
    a, e = cfg.algo, cfg.env
    return [
        (is_choice(a.name, AlgoName), f"algo.name must be {choices(AlgoName)}, got {a.name!r}"),
        (a.rollout_steps >= 1, "algo.rollout_steps must be >= 1"),
        (a.bptt >= 0, "algo.bptt must be >= 0 (0 = whole rollout / episode)"),
        (
            not isinstance(a, PPOConfig) or a.bptt <= a.rollout_steps,
            f"algo.bptt ({a.bptt}) must be <= algo.rollout_steps ({a.rollout_steps}): a chunk "
            "cannot be longer than the rollout (0 = the whole rollout)",
        ),
        (
            not isinstance(a, PPOConfig) or (a.epochs >= 1 and a.num_minibatches >= 1),
            "algo.epochs and num_minibatches must be >= 1",
        ),
        (a.lr > 0, "algo.lr must be > 0"),
        (
            a.kickstart_coef >= 0 and a.kickstart_steps >= 0 and a.bc_steps >= 0,
            "algo.kickstart_coef, kickstart_steps and bc_steps must be >= 0",
        ),
        (
            a.kickstart_coef == 0 or getattr(e, "teacher", None) is not None,
            "algo.kickstart_coef > 0 needs env.teacher (e.g. env.teacher=heuristic)",
        ),
        (
            a.bc_steps == 0 or a.kickstart_coef > 0,
            "algo.bc_steps > 0 needs algo.kickstart_coef > 0 (the cloning loss's weight)",
        ),
        (
            0 <= a.gamma <= 1 and 0 <= getattr(a, "gae_lambda", 0.0) <= 1,
            "algo.gamma and gae_lambda must be in [0, 1]",
        ),
        (getattr(a, "clip_coef", 1.0) > 0, "algo.clip_coef must be > 0"),
        (a.aux_coef >= 0, "algo.aux_coef must be >= 0 (0 = off)"),
        (
            a.aux_coef == 0 or cfg.model.aux_classes > 0,
            "algo.aux_coef > 0 needs model.aux_classes > 0 (e.g. model.aux_classes=4)",
        ),
        (
            a.aux_coef == 0 or isinstance(a, PPOConfig),
            "algo.aux_coef > 0 needs algo=ppo (REINFORCE does not train the auxiliary head)",
        ),
        (a.grad_clip_norm >= 0, "algo.grad_clip_norm must be >= 0 (0 = off)"),
    ]


def _selfplay_checks(cfg: TrainConfig) -> list[Check]:
    s = cfg.selfplay
    return [
        (s.every >= 1, f"selfplay.every must be >= 1, got {s.every}"),
        (s.pool_size >= 1, f"selfplay.pool_size must be >= 1, got {s.pool_size}"),
        (
            s.archive_size >= 0 and s.archive_every >= 1,
            "selfplay.archive_size must be >= 0 and selfplay.archive_every >= 1",
        ),
        (
            s.promote_win_rate is None or 0 < s.promote_win_rate <= 1,
            "selfplay.promote_win_rate must be in (0, 1] (or null: push every `every` updates)",
        ),
        (s.promote_window >= 1, "selfplay.promote_window must be >= 1"),
        (
            s.sampling in ("uniform", "pfsp"),
            f"selfplay.sampling must be uniform|pfsp, got {s.sampling!r}",
        ),
        (
            s.pfsp_power > 0 and s.pfsp_window >= 1,
            "selfplay.pfsp_power must be > 0 and selfplay.pfsp_window >= 1",
        ),
    ]
