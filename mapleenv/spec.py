"""``EnvSpec``: every setting of a Showdown env in one frozen, validated value.

A spec is built once (from keywords, a config or by hand), checked once with
:meth:`EnvSpec.checked` (backend resolved, plugins imported, the battle format checked
against the pinned simulator, team files read and validated), and then handed whole to
whatever builds envs: :func:`mapleenv.make_vector_env`, its workers, :class:`PokemonEnv`, the
backends, Ray shards. A checked spec pickles (plain values, teams packed), so spawned
workers build their env from it without checking it again. ``dataclasses.replace`` gives
per-env variants (``seed``, ``server``). docs/architecture.md, "EnvSpec".
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any

from poke_env.data import GenData
from poke_env.ps_client.server_configuration import ServerConfiguration
from poke_env.teambuilder.teambuilder import Teambuilder

from mapleenv.backends import available_backends, backend_available
from mapleenv.encoders import default_encoder
from mapleenv.opponents import check_policy_files, opponent_spec
from mapleenv.opponents.search_teacher import check_search_teacher
from mapleenv.plugins import import_plugins
from mapleenv.reward import RewardConfig
from mapleenv.search.teacher import SearchTeacherConfig
from mapleenv.showdown.formats import check_format
from mapleenv.showdown.package import external_server
from mapleenv.showdown.server import ShowdownServer
from mapleenv.showdown.teams import Team, read_teams

__all__ = ["BACKEND_ENV_VAR", "ON_ILLEGAL", "EnvSpec", "default_backend", "spec_of"]

BACKEND_ENV_VAR = "MAPLE_BACKEND"
"""Environment variable naming the backend used when none is given (tests run both)."""

ON_ILLEGAL = ("default", "raise")
"""Values of ``on_illegal``."""


def default_backend(server: Any = None) -> str:
    """The backend for ``backend=None``/``"auto"``: ``server`` when a server is given, else
    ``$MAPLE_BACKEND`` or ``direct``."""
    if server is not None:
        return "server"
    return os.environ.get(BACKEND_ENV_VAR) or "direct"


def _path_str(value: Any) -> Any:
    return str(value) if isinstance(value, Path) else value


@dataclass(frozen=True)
class EnvSpec:
    """Every env setting; the first eight are also ``PokemonEnv``'s positional arguments.

    Args:
        battle_format: a singles Showdown format (``gen9randombattle``...).
        opponent: an opponent name (:func:`mapleenv.opponents.make_opponent`: ``random``,
            ``policy:<ckpt>``, ``mix:a=1,b=2``...), a mix as a mapping of weights
            (``{"heuristic": 0.5, "random": 0.5}``) or, for a lone env, a non-listening
            poke-env ``Player``.
        server: the server backend's server: ``None`` (an embedded local one, or a pool's),
            ``"host:port"`` / ``ws://...`` (an external one; implies ``backend="server"``),
            a poke-env ``ServerConfiguration`` or a ``ShowdownServer``.
        encoder: encoder name or instance (:mod:`mapleenv.encoders`); ``None``: the
            format's (``simple`` for singles, ``doubles`` for doubles).
        reward: the reward weights (:class:`RewardConfig`, a mapping of its fields, ``None``).
        log_dir: where local servers keep their directory and log.
        max_turns: truncate the episode once the battle reaches this turn.
        seed: seed of the first ``reset`` (a vector env gives env ``i`` ``seed + i``).
        backend: ``"direct"``, ``"server"`` or a registered name; ``"auto"`` (or ``None``):
            :func:`default_backend`.
        backend_kwargs: extra arguments of the backend (e.g. ``record`` for ``direct``).
        reward_fn: ``"shaped"``, a registered reward, ``"module:factory"`` or a ``RewardFn``.
        teacher: an opponent name whose choice is added as ``teacher_action``.
        search_teacher: the engine search as a teacher (:class:`mapleenv.search.teacher.
            SearchTeacherConfig` or a mapping of its fields; ``share`` 0: off): its target
            is added as ``teacher_probs``.
        opponent_action_target: every observation also holds ``opponent_action``, the
            class of what the opponent did since the last decision
            (:mod:`mapleenv.opponent_action`; the target of the trainer's auxiliary head).
        team, opponent_team: team file/folder/text (read and validated by :meth:`checked`),
            loaded ``Team`` objects or a poke-env ``Teambuilder``; ``opponent_team=None``:
            the same as ``team``.
        timeout: longest wait for the simulator or server in one step (s).
        battle_minutes: truncate the episode once its battle has lasted this long (wall
            clock; ``None``: no limit), as ``max_turns`` does: a server that sends its
            turns slowly would otherwise hold an env for hours (docs/security.md).
        reconnect_timeout: how long ``reset`` retries starting a battle (s).
        on_illegal: ``"default"`` (play the default choice) or ``"raise"``.
        plugins: modules imported first in every process that builds envs.
        record_dir: server backend: each battle's websocket frames (JSONL) go there.
        replay_dir: each finished battle's HTML replay goes there.
        mask_futile: drop the moves that surely fail this turn from ``action_mask`` and
            the legal actions (Rest at full HP, a status move into a statused target...;
            :func:`mapleenv.encoders.features.certain.surely_fails`, docs/observation.md
            "Masking futile moves"); never every action. Off: the exact legal mask.
        battle_log: ``info`` at an episode's end also carries ``battle_log``, the battle's
            protocol lines as the agent saw them (what evaluation counts play quality from).
        search_view: ``info`` of every decision carries ``search_view``, the seat's view
            of the battle for decision-time search (:func:`mapleenv.search.decision_view`).
        servers: vector envs: local Showdown servers started for the envs.
        sim_hosts: vector envs, direct backend: shared simulator hosts (``None``: one per
            core, ``0``: one per env).
        server_config: extra ``config.js`` values of local servers.
    """

    battle_format: str = "gen9randombattle"
    opponent: Any = "random"
    server: Any = None
    encoder: Any = None
    reward: Any = None
    log_dir: str | None = None
    max_turns: int | None = None
    seed: int | None = None
    _: KW_ONLY
    backend: str | None = "auto"
    backend_kwargs: Mapping[str, Any] = field(default_factory=dict)
    reward_fn: Any = "shaped"
    teacher: str | None = None
    search_teacher: SearchTeacherConfig = field(default_factory=SearchTeacherConfig)
    opponent_action_target: bool = False
    team: Any = None
    opponent_team: Any = None
    timeout: float = 60.0
    battle_minutes: float | None = 60.0
    reconnect_timeout: float = 60.0
    on_illegal: str = "default"
    plugins: Sequence[str] = ()
    record_dir: str | None = None
    replay_dir: str | None = None
    mask_futile: bool = False
    battle_log: bool = False
    search_view: bool = False
    servers: int = 1
    sim_hosts: int | None = None
    server_config: Mapping[str, Any] = field(default_factory=dict)
    # what checked() checked (see is_checked); not a setting
    checked_for: tuple | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Cheap value checks and normalisation (no simulator): one-line ``ValueError``s."""
        set_ = object.__setattr__
        set_(self, "reward", RewardConfig.from_value(self.reward))
        set_(self, "search_teacher", SearchTeacherConfig.from_value(self.search_teacher))
        plugins = (self.plugins,) if isinstance(self.plugins, str) else tuple(self.plugins)
        set_(self, "plugins", plugins)
        set_(self, "backend_kwargs", dict(self.backend_kwargs or {}))
        set_(self, "server_config", dict(self.server_config or {}))
        if self.backend is not None:  # a config's choice (a str enum) as the plain name
            set_(self, "backend", str(self.backend))
        for name in ("log_dir", "record_dir", "replay_dir", "team", "opponent_team"):
            set_(self, name, _path_str(getattr(self, name)))
        if isinstance(self.server, str):
            set_(self, "server", external_server(self.server))
        if isinstance(self.opponent, Mapping):  # {name: weight}: the mix's ``mix:...`` name
            set_(self, "opponent", opponent_spec(self.opponent))
        problem = self._problem()
        if problem:
            raise ValueError(problem)

    def _problem(self) -> str | None:
        fmt = self.battle_format
        checks = [
            (isinstance(fmt, str) and fmt != "", f"battle_format must be a name, got {fmt!r}"),
            (
                not any(word in str(fmt).lower() for word in ("multi", "triples", "freeforall")),
                f"{fmt!r}: Maple plays singles and doubles formats",
            ),
            (
                self.max_turns is None or self.max_turns >= 1,
                f"max_turns must be >= 1 or None, got {self.max_turns}",
            ),
            (
                self.on_illegal in ON_ILLEGAL,
                f"on_illegal must be one of {ON_ILLEGAL}, got {self.on_illegal!r}",
            ),
            (self.timeout > 0, f"timeout must be > 0, got {self.timeout}"),
            (
                self.battle_minutes is None or self.battle_minutes > 0,
                f"battle_minutes must be > 0 or None, got {self.battle_minutes}",
            ),
            (
                self.reconnect_timeout > 0,
                f"reconnect_timeout must be > 0, got {self.reconnect_timeout}",
            ),
            (self.servers >= 1, f"servers must be >= 1, got {self.servers}"),
            (
                self.sim_hosts is None or self.sim_hosts >= 0,
                f"sim_hosts must be >= 0 or None, got {self.sim_hosts}",
            ),
            (
                isinstance(self.server, ServerConfiguration | ShowdownServer | None),
                "server must be None, a URL, a ServerConfiguration or a ShowdownServer, "
                f"not {self.server!r}",
            ),
        ]
        return next((message for ok, message in checks if not ok), None)

    # -- the one check
    @property
    def own_simulator(self) -> bool:
        """Whether Maple runs the pinned simulator for these battles (an external server
        may have formats and rules of its own)."""
        return (
            self.backend != "server"
            or self.server is None
            or isinstance(self.server, ShowdownServer)
        )

    def _check_key(self) -> tuple:
        return (self.battle_format, self.backend, self.team is None, self.opponent_team is None)

    @property
    def is_checked(self) -> bool:
        """Whether :meth:`checked` made this spec (``replace`` of ``seed``, ``server``,
        ``opponent``, directories... keeps it; of the format, backend or teams does not)."""
        loaded = all(
            t is None or isinstance(t, tuple | Teambuilder) for t in (self.team, self.opponent_team)
        )
        return loaded and self.checked_for == self._check_key()

    def checked(self, where: str = "") -> EnvSpec:
        """This spec, checked once for the whole run: plugins imported, the backend
        resolved and available, the format known to the pinned simulator (one Node call
        per process), teams read and validated (packed ``Team`` tuples), ``policy:`` opponent
        files read with the safe loader. A checked spec is returned as it is. ``where``
        prefixes the settings' names in messages as the caller spells them (``env.``: the
        trainer's config check, which calls this one check)."""
        if self.is_checked:
            return self
        try:  # first: a plugin may register the backend
            import_plugins(self.plugins)
        except ValueError as exc:
            raise ValueError(f"{where}plugins: {exc}" if where else str(exc)) from exc
        backend = self.backend
        if backend is None or backend == "auto":
            backend = default_backend(self.server)
        if self.server is not None and backend != "server":
            raise ValueError(
                f"a server ({self._server_name()}) needs backend='server' (got {backend!r})"
            )
        if not backend_available(backend):
            raise NotImplementedError(
                f"backend {backend!r} is not available (registered: "
                f"{', '.join(available_backends())}); see mapleenv.backends.register_backend"
            )
        spec = dataclasses.replace(self, backend=backend)
        if spec.encoder is None:  # the format's own: singles and doubles read differently
            spec = dataclasses.replace(spec, encoder=default_encoder(spec.battle_format))
        try:
            GenData.from_format(spec.battle_format)
        except Exception as exc:
            raise ValueError(f"bad battle_format {spec.battle_format!r}: {exc}") from exc
        if spec.own_simulator:
            try:
                check_format(spec.battle_format, spec.team is not None, f"{where}team")
            except ValueError as exc:
                raise ValueError(f"{where}battle_format: {exc}" if where else str(exc)) from exc
        teams = {key: spec._loaded_team(key, where) for key in ("team", "opponent_team")}
        spec = dataclasses.replace(spec, **teams)
        if isinstance(spec.opponent, str):  # policy:<checkpoint> files: the safe loader, once
            check_policy_files(spec.opponent, spec.battle_format)
        check_search_teacher(spec.search_teacher, spec.battle_format)  # the engine, the prior
        return dataclasses.replace(spec, checked_for=spec._check_key())

    def _loaded_team(self, key: str, where: str = "") -> Any:
        """A team setting read and validated (files, text) or as it is (``Team``s, a
        ``Teambuilder``)."""
        value = getattr(self, key)
        if value is None or isinstance(value, Teambuilder):
            return value
        if isinstance(value, Team):
            return (value,)
        if isinstance(value, str):
            fmt = self.battle_format if self.own_simulator else None
            return read_teams(value, fmt, key=f"{where}{key}")
        if isinstance(value, Sequence) and value and all(isinstance(t, Team) for t in value):
            return tuple(value)
        raise TypeError(f"{key}: expected a path, team text, Teams or a Teambuilder: {value!r}")

    def _server_name(self) -> str:
        server = self.server
        if isinstance(server, ShowdownServer):
            return repr(server)
        return getattr(server, "websocket_url", repr(server))


def spec_of(
    spec: EnvSpec | None = None, args: Sequence[Any] = (), settings: Mapping[str, Any] = ()
) -> EnvSpec:
    """The checked spec a public constructor runs on (``PokemonEnv``, ``make_vector_env``,
    ``make_ray_vector_env``): a checked ``spec`` as it is, trusted (no second check); else
    ``spec`` with ``settings`` replaced in it, or ``EnvSpec(*args, **settings)``, checked
    here, once."""
    settings = dict(settings)
    if spec is None:
        return EnvSpec(*args, **settings).checked()
    if args:
        raise TypeError("PokemonEnv: give the settings in spec=, or as arguments, not both")
    if settings:
        spec = dataclasses.replace(spec, **settings)
    return spec if spec.is_checked else spec.checked()
