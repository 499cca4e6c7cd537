"""The pure PPO loss by hand on a tiny batch, and the extra loss terms' one shape."""

from __future__ import annotations

import math

import pytest
import torch

from trainer.algos.ppo import ppo_losses
from trainer.algos.terms import LossTerm, TermInputs, add_terms, kickstart_term
from trainer.config import PPOConfig


def tiny_batch() -> dict[str, torch.Tensor]:
    """Two valid steps and one padding step (nonsense values that must not count)."""
    return {
        "logp": torch.tensor([[-0.5], [-1.0], [-2.0]]),
        "old_logp": torch.tensor([[-0.5], [-1.5], [9.0]]),  # ratios 1 and e^0.5
        "advantages": torch.tensor([[1.0], [2.0], [9.0]]),
        "values": torch.tensor([[1.0], [0.0], [9.0]]),
        "old_values": torch.tensor([[0.5], [0.5], [-9.0]]),
        "returns": torch.tensor([[2.0], [1.0], [9.0]]),
        "entropy": torch.tensor([[0.3], [0.5], [9.0]]),
        "valid": torch.tensor([[1.0], [1.0], [0.0]]),
    }


def test_ppo_loss_by_hand() -> None:
    cfg = PPOConfig(clip_coef=0.2, clip_vloss=True, ent_coef=0.01, vf_coef=0.5)
    out = ppo_losses(**tiny_batch(), cfg=cfg)
    # surrogate: max(-1 * 1, -1 * 1) = -1; max(-2 * e^0.5, -2 * 1.2) = -2.4 (clipped)
    assert float(out.policy_loss) == pytest.approx((-1.0 - 2.4) / 2)
    # value: clipped targets 0.5 + 0.2 and 0.5 - 0.2 give (0.7-2)^2 = 1.69 > 1, 0.49 < 1
    assert float(out.value_loss) == pytest.approx(0.5 * (1.69 + 1.0) / 2)
    assert float(out.entropy) == pytest.approx(0.4)
    assert float(out.loss) == pytest.approx(-1.7 - 0.01 * 0.4 + 0.5 * 0.6725)
    assert float(out.approx_kl) == pytest.approx((math.exp(0.5) - 1 - 0.5) / 2)
    assert float(out.clip_frac) == pytest.approx(0.5)  # the second step's ratio is clipped

    plain = ppo_losses(**tiny_batch(), cfg=PPOConfig(clip_vloss=False, vf_coef=0.5))
    assert float(plain.value_loss) == pytest.approx(0.5 * (1.0 + 1.0) / 2)
    cloning = ppo_losses(**tiny_batch(), cfg=cfg, pg_coef=0.0)  # only the value loss
    assert float(cloning.loss) == pytest.approx(0.5 * 0.6725)


def test_ppo_loss_takes_keywords_only() -> None:
    with pytest.raises(TypeError):
        ppo_losses(*tiny_batch().values(), PPOConfig())  # type: ignore[misc]


def inputs(teacher: list[int]) -> TermInputs:
    logits = torch.log(torch.tensor([[[0.25, 0.75]], [[0.5, 0.5]]]))  # [L=2, B=1, A=2]
    return TermInputs(
        logits=logits,
        action_mask=torch.ones(2, 1, 2, dtype=torch.bool),
        valid=torch.ones(2, 1),
        teacher_actions=torch.tensor(teacher).view(2, 1),
    )


def test_terms_add_their_weighted_loss_and_always_report() -> None:
    base = torch.tensor(1.0)
    loss, stats = add_terms(base, [kickstart_term(2.0)], inputs([1, -1]))
    # one taught step: -log 0.75; the untaught step does not count
    assert float(stats["kickstart_loss"]) == pytest.approx(-math.log(0.75))
    assert float(stats["teacher_agreement"]) == 1.0
    assert float(loss) == pytest.approx(1.0 + 2.0 * -math.log(0.75))
    off, stats = add_terms(base, [kickstart_term(0.0)], inputs([0, 0]))
    assert off is base and float(stats["teacher_agreement"]) == pytest.approx(0.5)


def test_terms_sum_in_order_under_their_names() -> None:
    def const(value: float):
        return lambda _: (torch.tensor(value), {})

    terms = [LossTerm("a", 0.5, const(2.0)), LossTerm("b", 3.0, const(1.0))]
    loss, stats = add_terms(torch.tensor(0.0), terms, inputs([0, 0]))
    assert float(loss) == 4.0 and list(stats) == ["a_loss", "b_loss"]
