"""The ``calc`` opponent (mapleenv/opponents/calc.py): choices on battles built from
protocol lines, real battles with no rejected choice, and its name wherever names go."""

from __future__ import annotations

import numpy as np
import pytest
from builders import make_battle, own_mon
from conftest import DirectPokemonEnv
from hydra import compose, initialize_config_dir
from poke_env.battle import Battle

from mapleenv.opponents import OpponentMix, make_opponent
from mapleenv.opponents.calc import CalcPlayer
from trainer.__main__ import CONF_DIR
from trainer.config import to_train_config


@pytest.fixture(scope="module")
def calc() -> CalcPlayer:
    player = make_opponent("calc")
    assert isinstance(player, CalcPlayer)
    return player


def choice(player: CalcPlayer, battle: Battle) -> str:
    return player.choose_move(battle).message


def test_super_effective_beats_resisted(calc) -> None:
    raichu = own_mon("Raichu", moves=("surf", "thunderbolt"), active=True, level=88)
    assert (
        choice(calc, make_battle([raichu], [("Gyarados", 80, 100)])) == "/choose move thunderbolt"
    )
    # the same moves into a Ground type: Surf now
    assert choice(calc, make_battle([raichu], [("Rhyperior", 80, 100)])) == "/choose move surf"


def test_a_priority_ko_beats_a_stronger_ko(calc) -> None:
    scizor = own_mon("Scizor", moves=("closecombat", "bulletpunch"), active=True)
    low = make_battle([scizor], [("Tyranitar", 80, 5)])
    assert choice(calc, low) == "/choose move bulletpunch"
    full = make_battle([scizor], [("Tyranitar", 80, 100)])  # no KO: the stronger move
    assert choice(calc, full) == "/choose move closecombat"


def test_futile_moves_are_never_chosen(calc) -> None:
    awake = own_mon("Clefable", moves=("sleeptalk", "snore", "splash"), active=True)
    assert choice(calc, make_battle([awake], [("Blissey", 88, 100)])) == "/choose move splash"
    rocks = own_mon("Clefable", moves=("stealthrock", "tackle"), active=True)
    assert choice(calc, make_battle([rocks], [("Blissey", 88, 100)])) == "/choose move stealthrock"
    already = make_battle(
        [rocks], [("Blissey", 88, 100)], events=("|-sidestart|p2: them|move: Stealth Rock",)
    )
    assert choice(calc, already) == "/choose move tackle"


def test_terastallizes_when_it_makes_a_ko(calc) -> None:
    def dragonite(tera: str) -> dict:
        return own_mon("Dragonite", moves=("extremespeed", "earthquake"), active=True, tera=tera)

    normal = make_battle([dragonite("Normal")], [("Alakazam", 85, 60)])
    assert choice(calc, normal) == "/choose move extremespeed terastallize"
    assert not normal.active_pokemon.is_terastallized  # the trial tera was undone
    fire = make_battle([dragonite("Fire")], [("Alakazam", 85, 60)])
    assert choice(calc, fire) == "/choose move earthquake"


def forced_switch(bench: list[dict], opponent: tuple[str, int, int]) -> Battle:
    """Our active fainted; the request asks for one of ``bench``."""
    fainted = own_mon("Clefable", active=True, fainted=True)
    battle = make_battle([fainted, *bench], [opponent])
    side = {"name": "me", "id": "p1", "pokemon": [fainted, *bench]}
    battle.parse_request({"forceSwitch": [True], "side": side, "rqid": 2})
    return battle


def test_a_forced_switch_picks_the_better_matchup(calc) -> None:
    swampert = own_mon("Swampert", moves=("earthquake", "waterfall"))
    charizard = own_mon("Charizard", moves=("flamethrower", "airslash"))
    for bench in ([swampert, charizard], [charizard, swampert]):
        battle = forced_switch(bench, ("Ferrothorn", 86, 100))
        assert not battle.available_moves and len(battle.available_switches) == 2
        assert choice(calc, battle) == "/choose switch Charizard"
    # into a Water attacker the order turns round
    battle = forced_switch([charizard, swampert], ("Starmie", 86, 100))
    assert choice(calc, battle) == "/choose switch Swampert"


def test_switches_out_when_threatened_and_weak_but_not_twice_in_a_row() -> None:
    calc = make_opponent("calc")  # its own memory of switches
    charizard = own_mon("Charizard", moves=("flamethrower", "airslash"), active=True)
    venusaur = own_mon("Venusaur", moves=("gigadrain", "sludgebomb"))
    battle = make_battle([charizard, venusaur], [("Swampert", 84, 100)])
    assert choice(calc, battle) == "/choose switch Venusaur"
    battle.end_turn(2)  # as if the switch had not happened: no second switch in a row
    assert choice(calc, battle) == "/choose move airslash"
    # not threatened (a weak, slow foe): it stays in and attacks
    calm = make_battle([charizard, venusaur], [("Blissey", 88, 100)])
    assert choice(make_opponent("calc"), calm).startswith("/choose move")


def compose_cfg(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("config", overrides=list(overrides))


@pytest.mark.integration  # node lists the simulator's formats
def test_calc_is_a_name_everywhere() -> None:
    mix = make_opponent("mix:calc=1,random=1", seed=0)
    assert isinstance(mix, OpponentMix)
    assert to_train_config(compose_cfg("env.opponent=calc")).env.opponent == "calc"
    cfg = to_train_config(compose_cfg("+env.opponent={calc: 1, heuristic: 1}"))
    assert dict(cfg.env.opponent) == {"calc": 1, "heuristic": 1}
    with pytest.raises(ValueError, match="singles only"):
        make_opponent("calc", "gen9randomdoublesbattle")


@pytest.mark.integration
def test_real_battles_have_no_rejected_choice() -> None:
    """A random agent against ``calc`` on the real simulator: every choice of both sides
    is accepted and the calculator hardly ever fails."""
    rng = np.random.default_rng(0)
    env = DirectPokemonEnv(opponent="calc", seed=3, backend_kwargs={"record": True})
    try:
        for _ in range(3):
            obs, _ = env.reset()
            done = False
            while not done:
                action = rng.choice(np.flatnonzero(obs["action_mask"]))
                obs, _, term, trunc, _ = env.step(action)
                done = term or trunc
            session = env._backend.session
            assert session.invalid_choices == {"p1": 0, "p2": 0}
            assert session.opponent_battle.finished
        calc = session.opponent
        assert isinstance(calc, CalcPlayer) and calc.damage.calls > 0
        assert calc.damage.failures <= 0.05 * calc.damage.calls
    finally:
        env.close()
