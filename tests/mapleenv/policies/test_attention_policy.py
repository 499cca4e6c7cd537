"""The entity-attention policy keeps the LSTM policy's contract and scores actions per entity."""

from __future__ import annotations

import pytest
import torch

from mapleenv.encoders.features import layout
from mapleenv.policies.attention import N_ACTIONS
from trainer.config import ModelConfig
from trainer.policy import build_policy, policy_spec

ENVS, STEPS = 3, 7
POKEMON = layout.LAYOUT[0].width


def make_policy(layers: int = 1, lay: layout.Layout = layout.SINGLES_ENTITIES) -> torch.nn.Module:
    torch.manual_seed(0)
    cfg = ModelConfig(
        kind="attention",
        token_size=16,
        attention_heads=2,
        attention_layers=2,
        hidden_size=8,
        num_layers=layers,
    )
    return build_policy(lay.size, N_ACTIONS, cfg).eval()


def observations(*lead: int, lay: layout.Layout = layout.SINGLES_ENTITIES) -> torch.Tensor:
    """Random observations within bounds, every Pokémon and move slot present."""
    low, high = (torch.from_numpy(b) for b in lay.bounds())
    obs = low + (high - low) * torch.rand(*lead, lay.size)
    for block, feature, repeat in (
        ("own_team", "present", 6),
        ("opponent_team", "present", 6),
        ("moves", "present", 4),
    ):
        for r in range(repeat):
            obs[..., layout.index(block, feature, r)] = 1.0
    return obs


def legal(*lead: int) -> torch.Tensor:
    mask = torch.ones(*lead, N_ACTIONS, dtype=torch.bool)
    mask[..., 10:22] = False  # no mega, z-moves or dynamax in gen 9
    return mask


@pytest.mark.parametrize(
    ("layers", "lay"),
    [(1, layout.SINGLES_ENTITIES), (2, layout.SINGLES_ENTITIES), (1, layout.SINGLES_SETS)],
    ids=lambda v: v.name if isinstance(v, layout.Layout) else str(v),
)
def test_sequence_replay_equals_stepping(layers: int, lay: layout.Layout) -> None:
    policy = make_policy(layers, lay)
    obs, mask = observations(STEPS, ENVS, lay=lay), legal(STEPS, ENVS)
    starts = torch.zeros(STEPS, ENVS)
    starts[0, :] = 1.0
    starts[3, 1] = 1.0  # env 1 starts a new episode mid-sequence
    starts[5, 2] = 1.0
    hidden = tuple(torch.randn_like(x) for x in policy.initial_state(ENVS))
    with torch.no_grad():
        seq_logits, seq_values, seq_final = policy(obs, mask, hidden, starts)
        state, step_logits, step_values = hidden, [], []
        for t in range(STEPS):
            logits, value, state = policy(obs[t], mask[t], state, starts[t])
            step_logits.append(logits)
            step_values.append(value)
    assert torch.allclose(seq_logits, torch.stack(step_logits), atol=1e-5)
    assert torch.allclose(seq_values, torch.stack(step_values), atol=1e-5)
    for a, b in zip(seq_final, state, strict=True):
        assert a.shape == (layers, ENVS, 8)
        assert torch.allclose(a, b, atol=1e-5)


def test_episode_start_resets_the_state() -> None:
    policy = make_policy()
    obs, mask = observations(ENVS), legal(ENVS)
    starts = torch.ones(ENVS)
    with torch.no_grad():
        fresh = policy(obs, mask, policy.initial_state(ENVS), starts)
        noisy = tuple(torch.randn_like(x) * 3 for x in policy.initial_state(ENVS))
        reset = policy(obs, mask, noisy, starts)
        kept = policy(obs, mask, noisy, torch.zeros(ENVS))
    assert torch.equal(fresh[0], reset[0]) and torch.equal(fresh[1], reset[1])
    assert not torch.allclose(fresh[0], kept[0])


def test_masked_actions_get_zero_probability_and_gradients_are_finite() -> None:
    policy = make_policy().train()
    obs = observations(ENVS)
    mask = torch.zeros(ENVS, N_ACTIONS, dtype=torch.bool)
    mask[:, [1, 6, 22]] = True
    logits, value, _ = policy(obs, mask, policy.initial_state(ENVS), torch.zeros(ENVS))
    probs = torch.softmax(logits, -1)
    assert (probs[~mask] == 0).all() and torch.allclose(probs.sum(-1), torch.ones(ENVS))
    (torch.log_softmax(logits, -1)[:, 6].sum() + value.sum()).backward()
    grads = [p.grad for p in policy.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)


def test_each_switch_is_scored_from_its_own_pokemon() -> None:
    """Swapping two benched Pokémon in the observation swaps their switch logits only."""
    policy = make_policy()
    obs = observations(1)
    for r in range(6):  # slot 0 is active, 1-5 on the bench
        obs[..., layout.index("own_team", "active", r)] = float(r == 0)
    swapped = obs.clone()
    a = slice(layout.OFFSETS["own_team"] + 2 * POKEMON, layout.OFFSETS["own_team"] + 3 * POKEMON)
    b = slice(layout.OFFSETS["own_team"] + 4 * POKEMON, layout.OFFSETS["own_team"] + 5 * POKEMON)
    swapped[..., a], swapped[..., b] = obs[..., b], obs[..., a]
    mask, hidden, starts = legal(1), policy.initial_state(1), torch.ones(1)
    with torch.no_grad():
        logits, value, _ = policy(obs, mask, hidden, starts)
        logits2, value2, _ = policy(swapped, mask, hidden, starts)
    assert torch.allclose(logits2[0, 2], logits[0, 4], atol=1e-5)
    assert torch.allclose(logits2[0, 4], logits[0, 2], atol=1e-5)
    assert torch.allclose(logits2[0, 6:], logits[0, 6:], atol=1e-5)
    assert torch.allclose(value, value2, atol=1e-5)


def test_checkpoint_spec_round_trips(tmp_path) -> None:
    policy = make_policy()
    path = tmp_path / "policy.pt"
    torch.save({"policy": policy_spec(policy), "model": policy.state_dict()}, path)
    loaded = torch.load(path, weights_only=True)
    spec = loaded["policy"]
    clone = build_policy(spec["obs_dim"], spec["n_actions"], spec["model"]).eval()
    clone.load_state_dict(loaded["model"])
    obs, mask, hidden = observations(ENVS), legal(ENVS), policy.initial_state(ENVS)
    with torch.no_grad():
        assert torch.equal(
            policy(obs, mask, hidden, torch.ones(ENVS))[0],
            clone(obs, mask, hidden, torch.ones(ENVS))[0],
        )


def test_attention_needs_the_rich_layout() -> None:
    with pytest.raises(ValueError, match="env.encoder=singles_sets"):
        build_policy(116, N_ACTIONS, ModelConfig(kind="attention"))


def test_rich_policies_keep_their_parameters_and_rich2_reads_its_blocks() -> None:
    """A rich policy has no parameters for rich2's blocks (old checkpoints load strictly);
    a rich2 policy scores move k from move_futility[k] and reads opponent_sets."""
    rich = make_policy()
    assert not any("futility" in k or "sets" in k for k in rich.state_dict())
    policy, lay = make_policy(lay=layout.SINGLES_SETS), layout.SINGLES_SETS
    obs, mask, hidden = observations(1, lay=lay), legal(1), policy.initial_state(1)
    with torch.no_grad():
        base, value, _ = policy(obs, mask, hidden, torch.ones(1))
        futile = obs.clone()
        futile[..., lay.index("move_futility", "futile", 2)] += 1.0
        logits, _, _ = policy(futile, mask, hidden, torch.ones(1))
        assert not torch.allclose(logits[0, 8], base[0, 8])
        sets = obs.clone()
        sets[..., lay.span("opponent_sets")] = 0.0
        assert not torch.allclose(policy(sets, mask, hidden, torch.ones(1))[1], value)
