"""The search term (expert iteration): the cross-entropy toward the search's targets over the
steps that have one, zero weight only reports, and its gradient pulls the policy toward the
target."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from trainer.algos.terms import TermInputs, add_terms, search_loss, search_term


def inputs(logits: torch.Tensor, target: torch.Tensor, mask: torch.Tensor | None = None):
    length, batch, actions = logits.shape
    mask = torch.ones(length, batch, actions, dtype=torch.bool) if mask is None else mask
    return TermInputs(
        logits=logits.masked_fill(~mask, float("-inf")),
        action_mask=mask,
        valid=torch.ones(length, batch),
        teacher_actions=torch.full((length, batch), -1),
        teacher_probs=target,
    )


def test_the_loss_is_the_cross_entropy_over_the_searched_steps_only() -> None:
    logits = torch.log(torch.tensor([[[0.25, 0.75]], [[0.5, 0.5]]]))  # [L=2, B=1, A=2]
    target = torch.tensor([[[0.2, 0.8]], [[0.0, 0.0]]])  # step 2: not searched
    loss, stats = search_loss(inputs(logits, target))
    ce = -(0.2 * math.log(0.25) + 0.8 * math.log(0.75))
    assert float(loss) == pytest.approx(ce)
    entropy = -(0.2 * math.log(0.2) + 0.8 * math.log(0.8))
    assert float(stats["search_kl"]) == pytest.approx(ce - entropy, abs=1e-6)
    assert float(stats["search_agreement"]) == 1.0


def test_zero_weight_only_reports() -> None:
    logits = torch.log(torch.tensor([[[0.25, 0.75]]]))
    base = torch.tensor(1.0)
    loss, stats = add_terms(base, [search_term(0.0)], inputs(logits, torch.tensor([[[1.0, 0]]])))
    assert loss is base
    assert float(stats["search_loss"]) == pytest.approx(-math.log(0.25))
    weighted, _ = add_terms(base, [search_term(2.0)], inputs(logits, torch.tensor([[[1.0, 0]]])))
    assert float(weighted) == pytest.approx(1.0 - 2.0 * math.log(0.25))


def test_its_gradient_moves_the_policy_toward_the_target() -> None:
    logits = torch.zeros(1, 1, 4, requires_grad=True)
    mask = torch.tensor([[[True, True, True, False]]])  # the masked action: no NaN, no pull
    target = torch.tensor([[[0.1, 0.7, 0.2, 0.0]]])
    loss, _ = search_loss(inputs(logits, target, mask))
    loss.backward()
    grad = logits.grad[0, 0]
    assert torch.isfinite(grad).all() and float(grad[3]) == 0.0
    # d CE / d logit = pi - target: descent raises the logits the target holds above pi
    assert float(grad[1]) < 0 < float(grad[0])
    torch.testing.assert_close(grad[:3], torch.full((3,), 1 / 3) - target[0, 0, :3])
    with torch.no_grad():
        stepped = logits - 1.0 * logits.grad
    after, _ = search_loss(inputs(stepped, target, mask))
    assert float(after) < float(loss.detach())


def test_a_batch_without_targets_skips_the_term() -> None:
    term = search_term(1.0)
    assert not term.applies(SimpleNamespace(teacher_probs=torch.zeros(3, 2, 4)))
    some = torch.zeros(3, 2, 4)
    some[1, 0, 2] = 1.0
    assert term.applies(SimpleNamespace(teacher_probs=some))
