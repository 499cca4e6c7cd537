"""Every typed Hydra config schema of the trainer and evaluator, with its value checks.

The YAML files in ``conf/`` extend these schemas, so an unknown key or a value of the wrong
type fails when Hydra composes the config, before anything starts; :func:`to_train_config`
checks the values. This module imports nothing from ``trainer``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf

DEFAULT_OPPONENTS = ("random", "max_power", "heuristic")


class ModelKind(StrEnum):
    """``model.kind``: the policy network (:func:`trainer.policies.build_policy`)."""

    lstm = "lstm"
    mlp = "mlp"
    attention = "attention"


class Activation(StrEnum):
    tanh = "tanh"
    relu = "relu"


class ShowdownVectorization(StrEnum):
    """``env.vectorization`` of Showdown envs: local workers or Ray actor shards."""

    async_ = "async"
    ray = "ray"


class GymVectorization(StrEnum):
    sync = "sync"
    async_ = "async"


class Backend(StrEnum):
    """``env.backend``: auto (direct, or server with server_url), direct or server."""

    auto = "auto"
    direct = "direct"
    server = "server"


def choices(enum: type[StrEnum]) -> str:
    """``a|b|c``: the values of a closed choice, for messages."""
    return "|".join(member.value for member in enum)


def is_choice(value: Any, enum: type[StrEnum]) -> bool:
    return value in {member.value for member in enum}


@dataclass
class SelfPlayConfig:
    """Self-play settings (active when ``env.opponent`` is ``self`` or a mix with ``self``)."""

    every: int = 10  # updates (iterations) between snapshot pushes
    pool_size: int = 5  # most recent snapshots the opponent draws from
    archive_size: int = 0  # older snapshots kept besides the recent ones
    archive_every: int = 10  # keep every n-th snapshot in the archive
    # gated promotion: a snapshot joins the pool only when the learner's win rate against
    # the newest pool member over the last promote_window battles reaches this; None: push
    # a snapshot every `every` updates
    promote_win_rate: float | None = None
    promote_window: int = 50  # battles against the newest member the gate looks at


@dataclass
class PeriodicEvalConfig:
    """Evaluation during training (``eval.*``): ``every`` = 0 turns it off."""

    every: int = 0  # updates (iterations) between evaluations
    battles: int = 50  # per opponent
    opponents: list[str] = field(default_factory=lambda: list(DEFAULT_OPPONENTS))
    num_envs: int = 4
    sample: bool = True  # False: greedy (argmax)


@dataclass
class EvaluateConfig:
    """``python -m trainer.evaluate`` settings (``conf/evaluate.yaml``)."""

    checkpoint: str = MISSING
    opponents: list[str] = field(default_factory=lambda: list(DEFAULT_OPPONENTS))
    battles: int = 200  # per opponent
    num_envs: int = 4
    sample: bool = True  # False: greedy (argmax over legal actions)
    device: str = "cpu"  # cpu | cuda | mps | auto
    seed: int = 0
    save_replays: bool = False
    output: str | None = None  # JSON path; default <hydra run dir>/evaluation.json
    battle_format: str | None = None  # default: the checkpoint's
    team: str | None = None  # team file or folder; default: the checkpoint's env.team
    opponent_team: str | None = None  # default: the checkpoint's env.opponent_team (or team)
    max_turns: int | None = None  # default: the checkpoint's env.max_turns
    backend: str = "auto"  # auto (direct, or server with server_url) | server | direct
    server_url: str | None = None  # use this server instead of starting one
    # modules imported here and in every env worker (custom opponents, encoders), added to
    # the checkpoint's env.plugins
    plugins: list[str] = field(default_factory=list)


@dataclass
class EnvConfig:
    """Fields every environment config has."""

    kind: str = MISSING
    num_envs: int = 8
    # a step that some async env worker does not answer within this many seconds stops
    # the run (stalls over 10 s are logged); None = wait forever
    step_timeout_s: float | None = 300.0


@dataclass
class RayShardConfig:
    """Ray scale-out of the Showdown envs (``env.vectorization=ray``; needs the ray extra)."""

    shards: int = 2  # Ray actors, each with its own vector env and server(s)
    cpus_per_shard: float = 1.0
    address: str | None = None  # None: start a local Ray; "auto": join this machine's cluster
    step_timeout_s: float | None = None


@dataclass
class ShowdownEnvConfig(EnvConfig):
    """Pokémon Showdown battles; the fields map to ``mapleenv.make_vector_env`` kwargs."""

    kind: str = "showdown"
    battle_format: str = "gen9randombattle"
    # formats without random teams (gen9ou...): a team file or folder (one team drawn per
    # battle, seeded), relative to the directory the run starts in; docs/teams.md
    team: str | None = None
    opponent_team: str | None = None  # the opponent's; None: the same as team
    # A name (``random``, ``max_power``, ``heuristic``, ``policy:<ckpt>``); typed Any so a
    # mix of opponents (a dict) can be given later without a schema change.
    opponent: Any = "random"
    servers: int = 1
    server_url: str | None = None
    encoder: str = "simple"
    reward: dict[str, float] | None = None
    max_turns: int | None = None
    # auto: direct (in-process simulator hosts), or server when server_url is set
    backend: str = "auto"
    sim_hosts: int | None = None  # direct: shared simulator hosts (None: one per core)
    teacher: str | None = None  # opponent name whose choices are the kickstarting target
    context: str = "spawn"
    vectorization: str = "async"  # async: local AsyncVectorEnv | ray: Ray actor shards
    ray: RayShardConfig = field(default_factory=RayShardConfig)
    # modules imported in the trainer and in every env worker before envs are built: they
    # register encoders, opponents, rewards (docs/extending.md)
    plugins: list[str] = field(default_factory=list)
    reward_fn: str = "shaped"  # a registered reward or "module:factory"; weights: reward


@dataclass
class GymEnvConfig(EnvConfig):
    """Any registered Gymnasium env with a Discrete action space."""

    kind: str = "gym"
    id: str = "CartPole-v1"
    vectorization: str = "sync"  # sync | async
    context: str | None = None  # multiprocessing context for async (None: Gymnasium default)
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class ModelConfig:
    """Actor-critic network; ``kind=mlp`` ignores the recurrent fields.

    Closed choices are plain strings checked against their enum (:class:`ModelKind`,
    :class:`Activation`), so checkpoints keep plain values."""

    kind: str = "lstm"  # ModelKind
    encoder_sizes: list[int] = field(default_factory=lambda: [256])
    hidden_size: int = 256
    num_layers: int = 1
    head_sizes: list[int] = field(default_factory=list)
    shared_trunk: bool = True
    activation: str = "tanh"  # Activation
    # attention (needs env.encoder=rich): token width, transformer layers and heads
    token_size: int = 128
    attention_layers: int = 2
    attention_heads: int = 4


class AlgoName(StrEnum):
    """``algo.name``: the learning algorithm (:data:`trainer.algos.ALGORITHMS`)."""

    ppo = "ppo"
    reinforce = "reinforce"


@dataclass
class AlgoConfig:
    """Fields every algorithm has; ``name`` picks the algorithm (``algo=ppo|reinforce``)."""

    name: str = MISSING  # AlgoName
    rollout_steps: int = 128  # T: steps per env per rollout
    bptt: int = 16  # truncated-BPTT length (0: whole rollout / whole episode)
    lr: float = 3e-4
    anneal_lr: bool = True
    adam_eps: float = 1e-5
    gamma: float = 0.99
    vf_coef: float = 0.5
    ent_coef: float = 0.01
    grad_clip_norm: float = 0.5
    norm_adv: bool = True
    # scale rewards by a running std of the discounted return (per env stream)
    norm_reward: bool = False
    bf16: bool = False  # bf16 autocast for the update, CUDA only
    # kickstarting: + coef * cross-entropy toward env.teacher's actions, the coef decayed
    # linearly to 0 from bc_steps to kickstart_steps env steps (0: constant); 0 = off
    kickstart_coef: float = 0.0
    kickstart_steps: int = 0
    # behaviour cloning: for the first bc_steps env steps the update is the kickstarting
    # cross-entropy (weight kickstart_coef) and the value loss only, no policy gradient
    bc_steps: int = 0


@dataclass
class PPOConfig(AlgoConfig):
    """Sequence PPO: chunks of ``bptt`` steps (0: the whole rollout) replayed from their
    stored start states, GAE, the clipped surrogate."""

    name: str = "ppo"
    num_minibatches: int = 4  # minibatches of chunks per epoch
    epochs: int = 4
    gae_lambda: float = 0.95
    clip_coef: float = 0.2
    clip_vloss: bool = True
    target_kl: float | None = None


@dataclass
class ReinforceConfig(AlgoConfig):
    """Sequence REINFORCE on complete episodes: Monte-Carlo returns, an optional learned
    baseline; ``bptt`` 0 = backpropagate through whole episodes, > 0 = truncate."""

    name: str = "reinforce"
    bptt: int = 0
    baseline: bool = True  # advantage = return - V(s) (V trained by vf_coef); else the return


@dataclass
class TrainConfig:
    """Top-level config of ``python -m trainer``."""

    env: EnvConfig = MISSING
    model: ModelConfig = MISSING
    algo: AlgoConfig = MISSING
    name: str = "maple"
    total_steps: int = 1_000_000
    seed: int = 1
    device: str = "auto"  # auto | cuda | mps | cpu (auto: cuda > mps > cpu)
    torch_threads: int = 0  # 0 = auto: half the CPU cores (envs need the rest), at most 8
    # threads of the update (CPU): the envs wait meanwhile; 0 = auto: every core, at most 16
    torch_update_threads: int = 0
    # training-time budget in minutes (resumed segments add up): the run stops at
    # total_steps or here, whichever comes first, and with algo.anneal_lr the learning rate
    # anneals by whichever is further along; None = steps only
    max_minutes: float | None = None
    resume: str | None = None  # run dir or checkpoint file
    checkpoint_every: int = 50  # iterations between periodic checkpoints (0: only last.pt)
    log_every: int = 10  # iterations between log lines
    tensorboard: bool = True
    selfplay: SelfPlayConfig = field(default_factory=SelfPlayConfig)  # env.opponent with self
    eval: PeriodicEvalConfig = field(default_factory=PeriodicEvalConfig)  # every=0: off


@dataclass
class PlayConfig:
    """``python -m trainer.play`` settings (``conf/play.yaml``)."""

    checkpoint: str = MISSING  # a checkpoint file or a run dir (its checkpoints/last.pt)
    server: str = "local"  # local | showdown | ws(s)://host:port/showdown/websocket | host:port
    mode: str = "accept"  # accept | challenge | ladder
    battles: int = 1
    username: str | None = None  # default MapleAgent (ladder: required)
    password: str | None = None  # for registered accounts (official server)
    opponent: str | None = None  # challenge: who; accept: only from this user (null: anyone)
    battle_format: str | None = None  # default: the checkpoint's
    team: str | None = None  # team file or folder (gen9ou...); default: the checkpoint's env.team
    sample: bool = True  # False: greedy (argmax over legal actions)
    seed: int | None = None
    port: int | None = None  # server=local: fixed port (default a free one)
    max_concurrent_battles: int = 1
    output: str | None = None  # JSON path; default <hydra run dir>/play.json


def register_configs() -> None:
    """Register the schemas; the YAML files in ``conf/`` list them in their defaults."""
    cs = ConfigStore.instance()
    cs.store(name="train_schema", node=TrainConfig)
    cs.store(group="env", name="showdown_schema", node=ShowdownEnvConfig)
    cs.store(group="env", name="gym_schema", node=GymEnvConfig)
    cs.store(group="model", name="model_schema", node=ModelConfig)
    cs.store(group="algo", name="ppo_schema", node=PPOConfig)
    cs.store(group="algo", name="reinforce_schema", node=ReinforceConfig)
    cs.store(name="evaluate_schema", node=EvaluateConfig)
    cs.store(name="play_schema", node=PlayConfig)


register_configs()


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


def to_train_config(cfg: DictConfig) -> TrainConfig:
    """Validate a composed config and return it as a typed :class:`TrainConfig`.

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
    problems = _check_values(obj) or _check_battle_format(obj.env) or _check_teams(obj.env)
    if problems:
        raise ConfigError("invalid config: " + "; ".join(problems))
    return obj


def _check_battle_format(env: EnvConfig) -> list[str]:
    """``env.battle_format`` against the pinned simulator's formats (Maple-run simulators
    only: an external server may have formats of its own)."""
    if not isinstance(env, ShowdownEnvConfig) or env.server_url is not None:
        return []
    from mapleenv.showdown import ShowdownError
    from mapleenv.showdown.formats import check_format

    try:
        check_format(env.battle_format, has_team=env.team is not None, team_key="env.team")
    except ValueError as exc:
        return [f"env.battle_format: {exc}"]
    except ShowdownError:  # no Node or package here: the env start will say so
        return []
    return []


def team_path(value: str | None) -> str | None:
    """A team file or folder setting as an absolute path, relative to the directory the
    command started in (Hydra's original cwd, also with ``hydra.job.chdir=true``); team
    text (a newline or ``|`` in it) stays as it is."""
    if value is None or "\n" in value or "|" in value:
        return value
    from hydra.utils import to_absolute_path

    return to_absolute_path(str(value))


def _check_teams(env: EnvConfig) -> list[str]:
    """Makes ``env.team``/``env.opponent_team`` absolute, and reads and validates them with
    the pinned simulator's validator (the file and Showdown's message on failure)."""
    if not isinstance(env, ShowdownEnvConfig):
        return []
    from mapleenv.showdown import ShowdownError
    from mapleenv.showdown.teams import read_teams

    fmt = env.battle_format if env.server_url is None else None  # an external server's own
    for key in ("team", "opponent_team"):
        value = team_path(getattr(env, key))
        setattr(env, key, value)
        if value is None:
            continue
        try:
            read_teams(value, fmt, key=f"env.{key}")
        except ValueError as exc:
            return [str(exc)]
        except ShowdownError:  # no Node or package here: the env start will say so
            return []
    return []


def _check_values(cfg: TrainConfig) -> list[str]:
    a, m, e = cfg.algo, cfg.model, cfg.env
    checks = [
        (
            cfg.device in ("auto", "cpu", "mps") or cfg.device.split(":")[0] == "cuda",
            f"device must be auto|cuda|mps|cpu, got {cfg.device!r}",
        ),
        (cfg.total_steps > 0, "total_steps must be > 0"),
        (cfg.max_minutes is None or cfg.max_minutes > 0, "max_minutes must be > 0 (or null)"),
        (cfg.torch_threads >= 0, "torch_threads must be >= 0"),
        (cfg.torch_update_threads >= 0, "torch_update_threads must be >= 0"),
        (cfg.checkpoint_every >= 0, "checkpoint_every must be >= 0"),
        (cfg.log_every >= 1, "log_every must be >= 1"),
        (e.num_envs >= 1, "env.num_envs must be >= 1"),
        (
            e.step_timeout_s is None or e.step_timeout_s > 0,
            "env.step_timeout_s must be > 0 (or null)",
        ),
        (e.kind in ("showdown", "gym"), f"env.kind must be showdown|gym, got {e.kind!r}"),
        (
            not isinstance(e, ShowdownEnvConfig)
            or is_choice(e.vectorization, ShowdownVectorization),
            f"env.vectorization must be {choices(ShowdownVectorization)}, "
            f"got {getattr(e, 'vectorization', None)!r}",
        ),
        (
            not isinstance(e, ShowdownEnvConfig) or is_choice(e.backend, Backend),
            f"env.backend must be {choices(Backend)}, got {getattr(e, 'backend', None)!r}",
        ),
        (
            m.token_size >= 1
            and m.attention_layers >= 1
            and m.attention_heads >= 1
            and m.token_size % m.attention_heads == 0,
            "model.token_size must be a multiple of model.attention_heads (both >= 1) "
            "and model.attention_layers >= 1",
        ),
        (
            not isinstance(e, GymEnvConfig) or is_choice(e.vectorization, GymVectorization),
            f"env.vectorization must be {choices(GymVectorization)}, "
            f"got {getattr(e, 'vectorization', None)!r}",
        ),
        (is_choice(m.kind, ModelKind), f"model.kind must be {choices(ModelKind)}, got {m.kind!r}"),
        (
            is_choice(m.activation, Activation),
            f"model.activation must be {choices(Activation)}, got {m.activation!r}",
        ),
        (m.hidden_size >= 1 and m.num_layers >= 1, "model.hidden_size and num_layers must be >= 1"),
        (all(s >= 1 for s in [*m.encoder_sizes, *m.head_sizes]), "layer sizes must be >= 1"),
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
        (a.grad_clip_norm >= 0, "algo.grad_clip_norm must be >= 0 (0 = off)"),
        (
            cfg.selfplay.promote_win_rate is None or 0 < cfg.selfplay.promote_win_rate <= 1,
            "selfplay.promote_win_rate must be in (0, 1] (or null: push every `every` updates)",
        ),
        (cfg.selfplay.promote_window >= 1, "selfplay.promote_window must be >= 1"),
    ]
    return [msg for ok, msg in checks if not ok]
