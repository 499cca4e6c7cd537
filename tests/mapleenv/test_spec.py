"""EnvSpec: one checked value carries every env setting to the envs, their workers and
backends; the battle format is checked once per run, not per worker."""

from __future__ import annotations

import dataclasses
import multiprocessing
import pickle
from pathlib import Path

import gymnasium
import numpy as np
import pytest

import mapleenv
from mapleenv.env import PokemonEnv
from mapleenv.showdown import formats
from mapleenv.showdown.teams import Team
from mapleenv.spec import BACKEND_ENV_VAR, EnvSpec
from mapleenv.vector.local import make_vector_env

# the tests marked backends use the default backend: the CI's second pass repeats them with
# MAPLE_BACKEND=server (the others name their backend, or start no env)

TEAMS = Path(__file__).resolve().parents[2] / "teams" / "gen9ou"


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"max_turns": 0}, "max_turns must be >= 1 or None, got 0"),
        ({"on_illegal": "ignore"}, "on_illegal must be one of"),
        ({"battle_format": "gen9multirandombattle"}, "Maple plays singles and doubles formats"),
        ({"timeout": 0}, "timeout must be > 0"),
        ({"servers": 0}, "servers must be >= 1"),
        ({"sim_hosts": -1}, "sim_hosts must be >= 0"),
        ({"server": 8000}, "server must be None, a URL"),
        ({"server": "ftp://example.org"}, "unsupported server URL"),
        ({"reward": {"victory": 1}}, "unknown reward key 'victory'"),
    ],
)
def test_a_bad_setting_is_one_clear_line(settings, says):
    with pytest.raises(ValueError, match=says) as caught:
        EnvSpec(**settings)
    assert "\n" not in str(caught.value)


def test_an_unknown_setting_is_named():
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_turn'"):
        PokemonEnv(max_turn=3)


@pytest.mark.integration  # node lists the simulator's formats
def test_checked_resolves_the_backend_and_checks_the_format(monkeypatch):
    monkeypatch.delenv(BACKEND_ENV_VAR, raising=False)
    assert EnvSpec().checked().backend == "direct"
    assert EnvSpec(server="127.0.0.1:8000").checked().backend == "server"
    monkeypatch.setenv(BACKEND_ENV_VAR, "server")
    assert EnvSpec().checked().backend == "server"
    with pytest.raises(ValueError, match="needs backend='server' \\(got 'direct'\\)"):
        EnvSpec(server="127.0.0.1:8000", backend="direct").checked()
    with pytest.raises(ValueError, match="unknown battle format 'gen9nonsense'"):
        EnvSpec(battle_format="gen9nonsense").checked()
    with pytest.raises(ValueError, match="'gen9ou' needs a team"):
        EnvSpec(battle_format="gen9ou").checked()
    # an external server has formats of its own: not checked against the pinned simulator
    assert EnvSpec("gen9nonsense", server="127.0.0.1:8000").checked().is_checked
    # no encoder named: the format's own; a named one (name or instance) stays
    assert EnvSpec().checked().encoder == "singles_basic"
    assert EnvSpec("gen9randomdoublesbattle").checked().encoder == "doubles_basic"
    assert EnvSpec("gen9randomdoublesbattle", encoder="doubles3").checked().encoder == "doubles3"


@pytest.mark.backends
@pytest.mark.integration  # node lists the simulator's formats
def test_a_checked_spec_stays_checked_for_per_env_variants_only():
    spec = EnvSpec("gen9ou", team=str(TEAMS), max_turns=40).checked()
    assert spec.is_checked and spec.checked() is spec
    assert isinstance(spec.team, tuple) and all(isinstance(t, Team) for t in spec.team)
    assert dataclasses.replace(spec, seed=3, opponent="heuristic").is_checked
    assert not dataclasses.replace(spec, battle_format="gen9uu").is_checked
    assert not dataclasses.replace(spec, team=str(TEAMS)).is_checked
    assert not EnvSpec("gen9ou", team=str(TEAMS)).is_checked


def _build_in_worker(spec: EnvSpec, replies: multiprocessing.Queue) -> None:
    """In a spawned process: build the env from the pickled spec, report what it did."""
    from mapleenv.showdown import teams

    env = PokemonEnv(spec=spec)
    try:
        replies.put(
            {
                "spec": env.env_spec,
                "format_lists": formats.known_formats.cache_info().misses,
                "team_reads": len(teams._cache),
                "backend": env.backend_name,
                "teams": [t.packed for t in env.team.teams],
            }
        )
    finally:
        env.close()


@pytest.mark.integration
def test_a_checked_spec_reaches_a_spawned_worker_whole_and_is_not_checked_again():
    spec = EnvSpec("gen9ou", team=str(TEAMS), seed=5, max_turns=30, backend="direct").checked()
    assert pickle.loads(pickle.dumps(spec)) == spec
    ctx = multiprocessing.get_context("spawn")
    replies = ctx.Queue()
    worker = ctx.Process(target=_build_in_worker, args=(spec, replies))
    worker.start()
    try:
        reply = replies.get(timeout=120)
    finally:
        worker.join(30)
    assert reply["spec"] == spec and reply["spec"].is_checked
    assert reply["backend"] == "direct"
    # no Node call for the format list and no team file read in the worker
    assert reply["format_lists"] == 0 and reply["team_reads"] == 0
    assert reply["teams"] == [t.packed for t in spec.team]


@pytest.mark.integration
def test_keywords_and_a_spec_give_the_same_env():
    settings = dict(opponent="max_power", max_turns=9, seed=11, encoder="simple")
    by_keywords = PokemonEnv("gen9randombattle", backend="direct", **settings)
    by_spec = PokemonEnv(spec=EnvSpec("gen9randombattle", backend="direct", **settings))
    try:
        assert by_keywords.env_spec == by_spec.env_spec
        assert by_keywords.observation_space == by_spec.observation_space
        first, _ = by_keywords.reset()  # both seeded: the same teams, the same first decision
        second, _ = by_spec.reset()
        np.testing.assert_array_equal(first["observation"], second["observation"])
        np.testing.assert_array_equal(first["action_mask"], second["action_mask"])
    finally:
        by_keywords.close()
        by_spec.close()
    # spec= with settings replaces those in it
    with_override = PokemonEnv(spec=by_spec.env_spec, max_turns=4)
    assert with_override.max_turns == 4 and with_override.env_spec.seed == 11
    with_override.close()


@pytest.mark.integration
def test_a_lone_env_runs_on_the_direct_backend_unless_a_server_is_named(monkeypatch):
    monkeypatch.delenv(BACKEND_ENV_VAR, raising=False)
    env = gymnasium.make(mapleenv.ENV_ID, battle_format="gen9randombattle", opponent="random")
    assert env.unwrapped.backend_name == "direct" and env.unwrapped.server is None
    env.close()
    external = PokemonEnv(server="127.0.0.1:8000")
    assert external.backend_name == "server" and external.server is None
    external.close()
    embedded = PokemonEnv(backend="server")
    assert embedded.server is not None and not embedded.server.is_alive()  # starts on reset
    embedded.close()


@pytest.mark.integration
def test_the_format_is_checked_once_per_run_not_per_worker():
    def format_checks() -> int:  # every check_format reads the (cached) format list once
        info = formats.known_formats.cache_info()
        return info.hits + info.misses

    before = format_checks()
    envs = make_vector_env(3, backend="direct", sim_hosts=1, seed=1, max_turns=5)
    try:
        specs = envs.get_attr("env_spec")
        envs.reset(seed=1)
    finally:
        envs.close()
    # once, here; the env built in this process for the spaces did not check again
    assert format_checks() - before == 1
    assert [s.seed for s in specs] == [1, 2, 3]
    assert all(s.is_checked and s.max_turns == 5 for s in specs)
    assert len({s.backend_kwargs["host_pool"]["dir"] for s in specs}) == 1  # one shared pool
