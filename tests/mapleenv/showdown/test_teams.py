"""Fixed teams (formats without random teams, docs/teams.md) with the real simulator: team
files in export and packed text, seeded draws from a folder, gen9ou battles with the
shipped teams on both backends, and the errors at start."""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from builders import write_tiny_checkpoint
from conftest import child_node_pids
from hydra import compose, initialize_config_dir
from poke_env.data.normalize import to_id_str
from warm_cli import run_python

from mapleenv.env import PokemonEnv
from mapleenv.showdown.teams import Team, TeamPool, load_teams, read_teams
from mapleenv.vector.local import make_vector_env
from trainer.__main__ import CONF_DIR
from trainer.apps.evaluate import EvaluateConfig, run
from trainer.config import ConfigError, to_train_config
from trainer.run.checkpoint import load_checkpoint, save_checkpoint

# the tests marked backends use the default backend: the CI's second pass repeats them with
# MAPLE_BACKEND=server (the others name their backend, or start no env)

ROOT = Path(__file__).resolve().parents[3]
TEAMS = ROOT / "teams" / "gen9ou"

ILLEGAL_MOVE = """Great Tusk @ Leftovers
Ability: Protosynthesis
Tera Type: Steel
EVs: 252 HP / 4 Atk / 252 Spe
Jolly Nature
- Headlong Rush
- Spore
- Knock Off
- Stealth Rock
"""

BANNED_POKEMON = """Koraidon @ Choice Scarf
Ability: Orichalcum Pulse
Tera Type: Fighting
EVs: 252 Atk / 4 SpD / 252 Spe
Jolly Nature
- Collision Course
- Flare Blitz
- U-turn
- Dragon Claw
"""


def compose_cfg(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("config", overrides=list(overrides))


def species(team: Team) -> list[str]:
    """Species ids of a packed team, in team order (``NAME|SPECIES|...``, species empty
    when it is the name)."""
    mons = [mon.split("|") for mon in team.packed.split("]")]
    return [to_id_str(fields[1] or fields[0]) for fields in mons]


@pytest.mark.integration
def test_export_and_packed_files_read_as_the_same_packed_team(tmp_path):
    """The shipped file is export text; its packed form, written to a file, reads back to
    the same packed team; both through the simulator's own Teams.import/pack."""
    (exported,) = load_teams(TEAMS / "balance.txt", "gen9ou")
    first = exported.packed.split("]")[0].split("|")
    assert first[:6] == [
        "Great Tusk",
        "",
        "Leftovers",
        "Protosynthesis",
        "HeadlongRush,RapidSpin,KnockOff,StealthRock",
        "Jolly",
    ]
    assert first[6] == "252,4,,,,252"  # EVs
    assert species(exported) == [
        "greattusk",
        "kingambit",
        "gholdengo",
        "dragapult",
        "corviknight",
        "garganacl",
    ]
    packed_file = tmp_path / "balance.packed"
    packed_file.write_text(exported.packed + "\n")
    (packed,) = load_teams(packed_file, "gen9ou")
    assert packed.packed == exported.packed and packed.name == str(packed_file)
    # a team given as text (not a path) is read the same way
    (inline,) = read_teams((TEAMS / "balance.txt").read_text(), "gen9ou")
    assert inline.packed == exported.packed


@pytest.mark.integration  # node validates the teams
def test_a_folder_draws_its_teams_reproducibly_from_the_seed():
    teams = load_teams(TEAMS, "gen9ou")
    assert [Path(t.name).name for t in teams] == ["balance.txt", "bulky.txt", "offense.txt"]

    def draws(seed: int, stream: int = 0, n: int = 30) -> list[str]:
        pool = TeamPool(teams, seed=seed, stream=stream)
        return [pool.yield_team() for _ in range(n)]

    assert draws(7) == draws(7)
    assert set(draws(7)) == {t.packed for t in teams}  # every team comes up
    assert draws(7) != draws(8)
    assert draws(7, stream=1) != draws(7)  # the opponent's stream is not the agent's
    pool = TeamPool(teams, seed=7)
    pool.yield_team()
    pool.seed(7)  # restarts the stream
    assert [pool.yield_team() for _ in range(30)] == draws(7)


def play_one(env: PokemonEnv, rng: np.random.Generator, max_steps: int = 1000):
    """One battle with random legal actions; the first observation's battle facts and the
    end's info."""
    obs, _ = env.reset()
    battle = env.battle
    first = (battle.active_pokemon.species, battle.opponent_active_pokemon.species)
    teams = (env.team.last, env.opponent_team.last)
    box = env.observation_space["observation"]
    for _ in range(max_steps):
        assert np.isfinite(obs["observation"]).all() and box.contains(obs["observation"])
        legal = np.flatnonzero(obs["action_mask"])
        obs, _, terminated, truncated, info = env.step(int(rng.choice(legal)))
        if terminated or truncated:
            return first, teams, terminated, info
    raise AssertionError(f"no end after {max_steps} steps")


@pytest.mark.integration
@pytest.mark.parametrize("opponent", ["heuristic", "policy"])
@pytest.mark.parametrize("backend", ["direct", "server"])
def test_gen9ou_battles_with_the_shipped_teams_run_to_the_end(
    backend, opponent, showdown_server, tmp_path
):
    """Both seats play teams drawn from the folder (the env seed decides which, the same on
    both backends); the agent, and a policy opponent, lead with their team's first
    Pokémon; the rich encoder covers every observation."""
    if opponent == "policy":
        opponent = f"policy:{write_tiny_checkpoint(tmp_path / 'tiny.pt')}"
    server = showdown_server if backend == "server" else None
    env = PokemonEnv(
        "gen9ou",
        team=str(TEAMS),
        opponent=opponent,
        encoder="rich",
        backend=backend,
        server=server,
        seed=11,
    )
    teams = load_teams(TEAMS, "gen9ou")
    agent_draws, opponent_draws = TeamPool(teams, 11, stream=0), TeamPool(teams, 11, stream=1)
    rng = np.random.default_rng(0)
    try:
        for _ in range(2):
            (lead, opponent_lead), (mine, theirs), terminated, info = play_one(env, rng)
            assert (mine.packed, theirs.packed) == (
                agent_draws.yield_team(),
                opponent_draws.yield_team(),
            )
            assert terminated and env.battle.finished and isinstance(info["won"], bool)
            assert [m.species for m in env.battle.team.values()] == species(mine)
            assert lead == species(mine)[0]
            revealed = {m.species for m in env.battle.opponent_team.values()}
            assert revealed and revealed <= set(species(theirs))
            if opponent.startswith("policy:"):
                assert opponent_lead == species(theirs)[0]
    finally:
        env.close()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BANNED_POKEMON, "Koraidon is tagged Uber, which is banned."),
        (ILLEGAL_MOVE, "Great Tusk can't learn Spore."),
    ],
)
@pytest.mark.backends
@pytest.mark.integration
def test_an_illegal_team_stops_the_start_with_the_validators_message(tmp_path, text, message):
    """In the env, the vector env (before any worker) and the trainer's config check: one
    line with the key, the file and Showdown's message; no simulator is left running."""
    folder = tmp_path / "teams"
    folder.mkdir()
    (folder / "good.txt").write_text((TEAMS / "bulky.txt").read_text())
    bad = folder / "illegal.txt"
    bad.write_text(text)
    expected = f"{re.escape(str(bad))} is not legal in gen9ou: .*{re.escape(message)}"
    before = set(child_node_pids())  # e.g. the session's Showdown server
    with pytest.raises(ValueError, match=f"^team: {expected}"):
        PokemonEnv("gen9ou", team=folder, backend="direct")
    with pytest.raises(ValueError, match=f"^opponent_team: {expected}"):
        make_vector_env(2, battle_format="gen9ou", team=TEAMS, opponent_team=bad)
    with pytest.raises(ConfigError, match=f"env.team: {expected}"):
        to_train_config(compose_cfg("env.battle_format=gen9ou", f"env.team={folder}"))
    assert set(child_node_pids()) <= before


@pytest.mark.backends
@pytest.mark.integration  # node lists the simulator's formats
def test_gen9ou_without_a_team_or_with_a_missing_one_names_the_key():
    with pytest.raises(ConfigError, match="'gen9ou' needs a team.*set env.team=<team file"):
        to_train_config(compose_cfg("env.battle_format=gen9ou"))
    with pytest.raises(ConfigError, match="env.opponent_team: no such team file or folder: '/"):
        to_train_config(
            compose_cfg(
                "env.battle_format=gen9ou", "env.team=teams/gen9ou", "env.opponent_team=nowhere"
            )
        )
    with pytest.raises(ValueError, match="'gen9ou' needs a team.*set team=<team file"):
        PokemonEnv("gen9ou", backend="direct")


@pytest.mark.backends
@pytest.mark.integration  # node validates the teams
def test_team_paths_resolve_against_the_start_directory(monkeypatch, tmp_path):
    """A relative env.team is relative to where the command starts (here: the repo root)
    and becomes absolute in the typed config, so env workers and shards agree on it."""
    monkeypatch.chdir(ROOT)
    cfg = to_train_config(compose_cfg("+experiment=lstm_ppo_gen9ou"))
    assert cfg.env.team == str(TEAMS) and cfg.env.opponent_team is None
    assert cfg.env.battle_format == "gen9ou" and cfg.env.encoder == "singles_entities"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="env.team: no such team file or folder"):
        to_train_config(compose_cfg("+experiment=lstm_ppo_gen9ou"))


@pytest.mark.backends
@pytest.mark.integration
@pytest.mark.timeout(700)
def test_evaluate_takes_the_checkpoints_teams_or_the_given_ones(tmp_path, monkeypatch):
    """The checkpoint's env.team (relative, as configured) is the default; a given
    opponent_team replaces the opponent's and is validated the same way."""
    checkpoint = write_tiny_checkpoint(tmp_path / "tiny.pt")
    saved = load_checkpoint(checkpoint)
    saved["config"]["env"] |= {"battle_format": "gen9ou", "team": "teams/gen9ou"}
    save_checkpoint(checkpoint, saved)
    output = tmp_path / "eval.json"
    done = run_python(
        [
            sys.executable,
            "-m",
            "trainer.evaluate",
            f"checkpoint={checkpoint}",
            "opponents=[random]",
            "battles=2",
            "num_envs=1",
            "backend=direct",
            f"opponent_team={TEAMS / 'offense.txt'}",
            f"output={output}",
            f"hydra.run.dir={tmp_path / 'hydra'}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads(output.read_text())
    assert document["battle_format"] == "gen9ou"
    assert (document["team"], document["opponent_team"]) == (
        str(TEAMS),
        str(TEAMS / "offense.txt"),
    )
    assert document["opponents"]["random"]["battles"] == 2
    assert not math.isnan(document["opponents"]["random"]["mean_turns"])
    bad = tmp_path / "illegal.txt"
    bad.write_text(ILLEGAL_MOVE)
    monkeypatch.chdir(ROOT)  # where the checkpoint's teams/gen9ou is
    with pytest.raises(ValueError, match=f"^opponent_team: {re.escape(str(bad))} is not legal"):
        run(
            EvaluateConfig(checkpoint=str(checkpoint), opponent_team=str(bad), battles=1),
            tmp_path,
        )
