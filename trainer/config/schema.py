"""Every typed Hydra config schema of the trainer, the evaluator and live play.

The YAML files in ``conf/`` extend these schemas, so an unknown key or a value of the wrong
type fails when Hydra composes the config, before anything starts; the value checks are in
:mod:`trainer.config.checks`. The ``model`` schema is the network's own settings,
:class:`mapleenv.policies.ModelConfig`; the env settings (``env.*``, and those evaluate and
play share) are ``mapleenv.EnvSpec``'s own fields, made by
:func:`trainer.config.spec_fields.spec_schema`: the classes here add only their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from mapleenv.policies import ModelConfig
from mapleenv.search import SearchConfig
from trainer.config.spec_fields import Backend as Backend  # re-exported: env.backend's type
from trainer.config.spec_fields import spec_schema

DEFAULT_OPPONENTS = ("random", "max_power", "heuristic")


# a name equal to its value (Hydra takes an enum by name, and writes the name back)
ShowdownVectorization = StrEnum(
    "ShowdownVectorization", [("async", "async"), ("ray", "ray")], module=__name__
)
ShowdownVectorization.__doc__ = (
    "``env.vectorization`` of Showdown envs: local workers (async) or Ray actor shards."
)


class GymVectorization(StrEnum):
    sync = "sync"
    async_ = "async"


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
    # how a battle against `self` picks its snapshot: uniform, or pfsp (prioritized
    # fictitious self-play: weight (1 - p)^pfsp_power, p = the learner's win rate against
    # that snapshot over its last pfsp_window battles, so members it still loses to play more)
    sampling: str = "uniform"
    pfsp_power: float = 2.0
    pfsp_window: int = 100


@dataclass
class PeriodicEvalConfig:
    """Evaluation during training (``eval.*``): ``every`` = 0 turns it off."""

    every: int = 0  # updates (iterations) between evaluations
    battles: int = 50  # per opponent
    opponents: list[str] = field(default_factory=lambda: list(DEFAULT_OPPONENTS))
    num_envs: int = 4
    sample: bool = True  # False: greedy (argmax)


@dataclass
class SearchSettings(SearchConfig):
    """Decision-time search (``search.*``; docs/search.md): off unless ``enabled``; the
    other fields and their checks are ``mapleenv.search.SearchConfig``'s."""

    enabled: bool = False


# evaluate's EnvSpec settings: backend (auto: direct, or server with server_url) and
# plugins (imported here and in every env worker; the checkpoint's env.plugins never are,
# docs/security.md) as EnvSpec has them; the others None by default: the checkpoint's env.*
_EvaluateEnv = spec_schema(
    "_EvaluateEnv",
    ("backend", "plugins", "battle_minutes"),
    from_checkpoint=("battle_format", "team", "opponent_team", "max_turns", "mask_futile"),
    module=__name__,
)


@dataclass
class EvaluateConfig(_EvaluateEnv):
    """``python -m trainer.evaluate`` settings (``conf/evaluate.yaml``); the env settings
    it shares with ``EnvSpec`` come from there (``_EvaluateEnv``)."""

    checkpoint: str = MISSING
    opponents: list[str] = field(default_factory=lambda: list(DEFAULT_OPPONENTS))
    battles: int = 200  # per opponent
    num_envs: int = 4
    sample: bool = True  # False: greedy (argmax over legal actions)
    device: str = "cpu"  # cpu | cuda | mps | auto
    seed: int = 0  # the evaluation's own seed (0: repeatable), not EnvSpec's None
    save_replays: bool = False
    output: str | None = None  # JSON path; default <hydra run dir>/evaluation.json
    server_url: str | None = None  # use this server instead of starting one
    search: SearchSettings = field(default_factory=SearchSettings)


@dataclass
class EnvConfig:
    """Fields every environment config has."""

    kind: str = MISSING
    num_envs: int = 8
    # a step that some async env worker does not answer within this many seconds stops
    # the run (stalls over 10 s are logged); None = wait forever
    step_timeout_s: float | None = 300.0
    # start more env workers, servers and simulator hosts than the machine holds (CPU
    # cores, available memory; mapleenv.limits): off, a count past it is refused at start
    allow_oversubscribe: bool = False


@dataclass
class RayShardConfig:
    """Ray scale-out of the Showdown envs (``env.vectorization=ray``; needs the ray extra)."""

    shards: int = 2  # Ray actors, each with its own vector env and server(s)
    cpus_per_shard: float = 1.0
    address: str | None = None  # None: start a local Ray; "auto": join this machine's cluster
    step_timeout_s: float | None = None


# env.* settings that are EnvSpec's (their meaning: EnvSpec's docstring, docs/teams.md for
# team files; a relative team path is relative to the directory the run starts in). The
# trainer sets the rest itself: server (from env.server_url), log_dir, seed, on_illegal.
_ShowdownEnv = spec_schema(
    "_ShowdownEnv",
    (
        "battle_format",
        "team",
        "opponent_team",
        "opponent",  # a name or a mix mapping (mix:...), hence Any
        "servers",
        "encoder",
        "reward",
        "max_turns",
        "battle_minutes",  # a battle lasting longer is truncated (a slow external server)
        "backend",  # auto: direct (in-process simulator hosts), or server with server_url
        "sim_hosts",  # direct: shared simulator hosts (None: one per core, or per Ray CPU)
        "teacher",  # opponent name whose choices are the kickstarting target
        "search_teacher",  # the engine search's targets at a share of decisions (algo.search_coef)
        "opponent_action_target",  # algo.aux_coef > 0 turns it on by itself
        "mask_futile",
        "plugins",  # imported in the trainer and in every env worker (docs/extending.md)
        "reward_fn",  # a registered reward or "module:factory"; weights: reward
    ),
    module=__name__,
)


@dataclass
class ShowdownEnvConfig(_ShowdownEnv, EnvConfig):
    """Pokémon Showdown battles: ``EnvSpec``'s settings (``_ShowdownEnv``) plus how the
    trainer runs the envs (the fields here)."""

    kind: str = "showdown"
    server_url: str | None = None  # EnvSpec's server: an external server's URL
    context: str = "spawn"
    # async: local AsyncVectorEnv | ray: Ray actor shards
    vectorization: ShowdownVectorization = ShowdownVectorization("async")  # type: ignore[valid-type]
    # battles per env worker process (async; divides num_envs): one start-up and one
    # message per step for all of them (mapleenv.vector.group, docs/scaling.md)
    battles_per_worker: int = 1
    ray: RayShardConfig = field(default_factory=RayShardConfig)


@dataclass
class GymEnvConfig(EnvConfig):
    """Any registered Gymnasium env with a Discrete action space."""

    kind: str = "gym"
    id: str = "CartPole-v1"
    vectorization: str = "sync"  # sync | async
    context: str | None = None  # multiprocessing context for async (None: Gymnasium default)
    kwargs: dict[str, Any] = field(default_factory=dict)


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
    # auxiliary loss: + coef * cross-entropy of the model.aux_classes head toward the
    # opponent's next action class (env.opponent_action_target, set by it); 0 = off; PPO only
    aux_coef: float = 0.0
    # expert iteration: + coef * cross-entropy toward env.search_teacher's targets (the
    # engine search's improved policy at env.search_teacher.share of decisions); 0 = off
    search_coef: float = 0.0


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
    # a checkpoint whose network weights (only) start this run: fine-tuning (resume wins)
    init_from: str | None = None
    checkpoint_every: int = 50  # iterations between periodic checkpoints (0: only last.pt)
    log_every: int = 10  # iterations between log lines
    tensorboard: bool = True
    selfplay: SelfPlayConfig = field(default_factory=SelfPlayConfig)  # env.opponent with self
    eval: PeriodicEvalConfig = field(default_factory=PeriodicEvalConfig)  # every=0: off


# play's EnvSpec settings: seed, battle_minutes and plugins (imported first, e.g. a
# plugin's encoder; the checkpoint's env.plugins never are) as EnvSpec has them; the others
# None by default: the checkpoint's env.*
_PlayEnv = spec_schema(
    "_PlayEnv",
    ("seed", "plugins", "battle_minutes"),  # a battle still going then: forfeited, one line
    from_checkpoint=("battle_format", "team", "mask_futile", "max_turns"),
    module=__name__,
)


@dataclass
class PlayConfig(_PlayEnv):
    """``python -m trainer.play`` settings (``conf/play.yaml``); the env settings it shares
    with ``EnvSpec`` come from there (``_PlayEnv``). ``opponent`` and ``server`` are play's
    own: a user to challenge and where to play, not EnvSpec's."""

    checkpoint: str = MISSING  # a checkpoint file or a run dir (its checkpoints/last.pt)
    server: str = "local"  # local | showdown | ws(s)://host:port/showdown/websocket | host:port
    mode: str = "accept"  # accept | challenge | ladder
    battles: int = 1
    username: str | None = None  # default MapleAgent (ladder: required)
    # for registered accounts (official server); from the command line only as an
    # interpolation (${oc.env:VAR}); else password_file, else $MAPLE_PASSWORD (docs/security.md)
    password: str | None = None
    password_file: str | None = None  # a file holding the password (first line)
    opponent: str | None = None  # challenge: who; accept: only from this user (null: anyone)
    sample: bool = True  # False: greedy (argmax over legal actions)
    port: int | None = None  # server=local: fixed port (default a free one)
    max_concurrent_battles: int = 1
    output: str | None = None  # JSON path; default <hydra run dir>/play.json
    search: SearchSettings = field(default_factory=SearchSettings)


OWN_MEANING: dict[type, dict[str, str]] = {
    EvaluateConfig: {"seed": "the evaluation's base seed, 0 by default so a rerun repeats"},
    PlayConfig: {
        "opponent": "the Showdown user to challenge or accept, not an opponent policy",
        "server": "where to play (local, showdown, a URL), not a started env's server",
    },
}
"""Fields named like an ``EnvSpec`` setting that mean something else (not derived)."""


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
