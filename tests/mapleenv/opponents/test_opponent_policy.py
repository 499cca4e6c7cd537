"""PolicyOpponent: a frozen Maple policy as a poke-env opponent (``policy:<checkpoint>``)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from builders import make_battle, own_mon, write_tiny_checkpoint
from conftest import RECORDED_BATTLES, replay_decisions, synthetic_battle

from mapleenv.actions import legal_actions, mask_from_legal
from mapleenv.encoders import make_encoder
from mapleenv.env import PokemonEnv
from mapleenv.opponents import make_opponent
from mapleenv.opponents.policy import FrozenPolicy, PolicyOpponent
from mapleenv.policies import load_checkpoint, policy_from_snapshot, read_snapshot
from trainer.run.checkpoint import CheckpointError, save_checkpoint


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    return write_tiny_checkpoint(tmp_path / "tiny.pt")


def other_battle():
    battle = synthetic_battle(
        [
            ("Pikachu", 90, "100/100", ["thunderbolt", "surf", "quickattack"]),
            ("Snorlax", 80, "50/100", ["bodyslam"]),
        ],
        opponent_messages=[["switch", "p2a: Gyarados", "Gyarados, L80", "100/100"]],
    )
    battle._battle_tag = "battle-gen9randombattle-other"
    return battle


def test_greedy_opponent_plays_the_argmax_of_the_trainer_policy(checkpoint):
    opponent = make_opponent(f"policy_greedy:{checkpoint}", seed=0)
    assert isinstance(opponent, PolicyOpponent) and not opponent.sample
    reference = policy_from_snapshot(read_snapshot(checkpoint))
    encoder = make_encoder("simple")
    state = reference.initial_state(1)
    checked = 0

    def decide(battle):
        nonlocal state, checked
        legal = legal_actions(battle)
        order = opponent.choose_move(battle)
        obs = np.clip(encoder.encode(battle), encoder.low, encoder.high).astype(np.float32)
        with torch.no_grad():
            logits, _, state = reference(
                torch.from_numpy(obs)[None],
                torch.from_numpy(mask_from_legal(legal, 26)).bool()[None],
                state,
                torch.tensor([float(checked == 0)]),
            )
        assert order.message == legal[int(logits[0].argmax())].message
        checked += 1

    replay_decisions(RECORDED_BATTLES[0], decide)
    assert checked > 5 and opponent.decisions == checked


def test_each_battle_has_its_own_state_reset_at_battle_start(checkpoint):
    alone = make_opponent(f"policy_greedy:{checkpoint}")
    interleaved = make_opponent(f"policy_greedy:{checkpoint}")
    other = other_battle()
    tags = []

    def decide_alone(battle):
        tags.append(battle.battle_tag)
        return alone.choose_move(battle).message

    def decide_interleaved(battle):
        interleaved.choose_move(other)  # another battle in between must not leak state
        return interleaved.choose_move(battle).message

    orders_alone, _ = replay_decisions(RECORDED_BATTLES[1], decide_alone)
    orders_interleaved, _ = replay_decisions(RECORDED_BATTLES[1], decide_interleaved)
    assert orders_alone == orders_interleaved
    tag = tags[0]
    h_alone, c_alone = alone.battle_state(tag)
    h_mixed, c_mixed = interleaved.battle_state(tag)
    assert h_alone.shape == (1, 1, 16)  # [layers, 1, hidden]
    assert torch.equal(h_alone, h_mixed) and torch.equal(c_alone, c_mixed)
    assert not torch.equal(interleaved.battle_state(other.battle_tag)[0], h_mixed)
    assert h_alone.abs().sum() > 0

    # A new battle starts from a zero state: replaying it after reset gives the same play.
    alone.reset_battles()
    assert alone.battle_state(tag) is None
    orders_again, _ = replay_decisions(RECORDED_BATTLES[1], decide_alone)
    assert orders_again == orders_alone
    assert torch.equal(alone.battle_state(tag)[0], h_alone)


def test_sampling_opponent_stays_legal_and_is_seeded(checkpoint):
    def play(seed):
        opponent = make_opponent(f"policy:{checkpoint}", seed=seed)
        assert opponent.sample

        def decide(battle):
            order = opponent.choose_move(battle)
            assert order.message in {o.message for o in legal_actions(battle).values()}
            return order.message

        return replay_decisions(RECORDED_BATTLES[2], decide)[0]

    first = play(1)
    assert play(1) == first
    assert any(play(seed) != first for seed in (2, 3, 4))


def test_mask_futile_opponent_never_plays_a_move_that_surely_fails(checkpoint):
    """``mask_futile`` (play's key): Rest at full HP and Sleep Talk while awake are never
    chosen, though the plain mask offers them."""
    battle = make_battle(
        [
            own_mon("Clefable", moves=("rest", "sleeptalk", "moonblast"), active=True),
            own_mon("Blissey", moves=("seismictoss",)),
        ],
        [("Garchomp", 77, 100)],
    )
    policy = FrozenPolicy.from_snapshot(read_snapshot(checkpoint))

    def choices(mask_futile: bool) -> set[str]:
        player = PolicyOpponent([policy], mask_futile=mask_futile, seed=0)
        return {player.choose_move(battle).message.split()[2] for _ in range(60)}

    masked, plain = choices(True), choices(False)
    assert masked and not masked & {"rest", "sleeptalk"}
    assert plain & {"rest", "sleeptalk"}


def test_a_checkpoint_trained_with_mask_futile_masks_futile_moves_as_an_opponent(
    tmp_path, checkpoint
):
    """``policy:<checkpoint>`` plays as its run did: a checkpoint whose ``env.mask_futile``
    was on never chooses Rest at full HP or Sleep Talk while awake, with the opponent's own
    ``mask_futile`` off; the same weights saved without the setting do choose them."""
    battle = make_battle(
        [
            own_mon("Clefable", moves=("rest", "sleeptalk", "moonblast"), active=True),
            own_mon("Blissey", moves=("seismictoss",)),
        ],
        [("Garchomp", 77, 100)],
    )
    saved = load_checkpoint(checkpoint)
    saved["config"]["env"]["mask_futile"] = True
    masked_file = save_checkpoint(tmp_path / "masked.pt", saved)

    def choices(path: Path) -> set[str]:
        player = make_opponent(f"policy:{path}", seed=0)
        assert not player.mask_futile  # the player-level setting stays off
        return {player.choose_move(battle).message.split()[2] for _ in range(60)}

    assert FrozenPolicy.from_snapshot(read_snapshot(masked_file)).mask_futile
    assert not FrozenPolicy.from_snapshot(read_snapshot(checkpoint)).mask_futile
    masked, plain = choices(masked_file), choices(checkpoint)
    assert masked and not masked & {"rest", "sleeptalk"}
    assert plain & {"rest", "sleeptalk"}


def test_bad_policy_names_fail_clearly(tmp_path, checkpoint):
    with pytest.raises(FileNotFoundError, match="not found"):
        make_opponent(f"policy:{tmp_path / 'missing.pt'}")
    with pytest.raises(ValueError, match="checkpoint"):
        make_opponent("policy")
    bad = save_checkpoint(tmp_path / "bad.pt", {"weights": torch.zeros(1)})
    with pytest.raises(CheckpointError, match="not a Maple policy checkpoint"):
        make_opponent(f"policy:{bad}")
    foreign = tmp_path / "foreign.pt"
    torch.save({"weights": 1}, foreign)
    with pytest.raises(CheckpointError, match=f"{foreign} is not a Maple checkpoint"):
        make_opponent(f"policy:{foreign}")


def test_a_snapshot_cannot_name_code_to_import(checkpoint):
    """Older snapshots named a ``loader`` function that was imported and called; a file
    must not pick the code that runs, so the key is ignored: the network comes from
    Maple's own registry and the named module is never imported."""
    snapshot = read_snapshot(checkpoint)
    snapshot["loader"] = "maple_test_never_imported:load"
    policy = FrozenPolicy.from_snapshot(snapshot)
    assert "maple_test_never_imported" not in sys.modules
    assert policy.obs_dim == snapshot["policy"]["obs_dim"]


def play_one_battle(env: PokemonEnv) -> tuple[bool, dict]:
    """Random legal actions until the battle ends; returns (terminated, final info)."""
    rng = np.random.default_rng(0)
    obs, _ = env.reset()
    for _ in range(2000):
        action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return terminated, info
    raise AssertionError("the battle did not end in 2000 steps")


@pytest.mark.integration
def test_policy_opponent_plays_a_real_battle(showdown_server, checkpoint):
    env = PokemonEnv(opponent=f"policy:{checkpoint}", server=showdown_server, seed=0)
    try:
        terminated, info = play_one_battle(env)
    finally:
        env.close()
    assert terminated and isinstance(info["won"], bool)
    assert info["opponent"] == f"policy:{checkpoint}"
    assert info["opponent_policy_id"] == 0  # the pool id of the policy that played
    assert env.opponent.decisions >= info["turns"] - 1 > 0
    assert env.opponent.battle_state(info["battle_tag"]) is not None


@pytest.mark.integration
def test_a_self_play_mix_reports_the_snapshot_that_played(showdown_server, checkpoint):
    snapshot = {**read_snapshot(checkpoint), "id": 3}
    env = PokemonEnv(opponent="mix:self=1,random=0", server=showdown_server, seed=0)
    try:
        assert env.call_opponent("sync_pool", [snapshot], [3]) == [3]
        terminated, info = play_one_battle(env)
    finally:
        env.close()
    assert terminated and info["opponent"] == "self"
    assert info["opponent_policy_id"] == 3  # what self-play's promotion gate counts
