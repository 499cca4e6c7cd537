"""The extra loss terms both updates add beside their own loss, in one shape: :class:`LossTerm`.

A term is a name, a weight and a pure function of the policy's replayed outputs and the
batch's targets (:class:`TermInputs`) that returns a scalar loss and its statistics. The
update (:mod:`trainer.algos.ppo`, :mod:`trainer.algos.reinforce`) sums ``coef * loss`` of
the terms it is given (a term with ``coef == 0`` only reports) and logs ``<name>_loss`` with
the term's statistics. The trainer builds the list (:mod:`trainer.run.train`); a new term is
one more constructor here.

- **kickstart** (Schmitt et al., 2018, "Kickstarting Deep Reinforcement Learning"):
  ``-log pi(teacher action)`` over the steps that have a teacher action
  (``teacher_actions >= 0``), a cross-entropy toward a teacher policy (e.g. poke-env's
  heuristic player) whose weight the trainer anneals to zero (``algo.kickstart_coef``,
  ``bc_steps``, ``kickstart_steps``); behaviour cloning is the same term with the policy
  gradient switched off (``pg_coef=0``).
- **search** (expert iteration: Anthony et al., 2017, "Thinking Fast and Slow with Deep
  Learning and Tree Search"; AlphaZero's policy target): the cross-entropy
  ``-sum_a target(a) log pi(a)`` toward the engine search's improved policy over the steps
  that have one (``teacher_probs`` rows that are not all zero; ``env.search_teacher``,
  ``algo.search_coef``). The acted action stays the policy's sample, so PPO stays on-policy.
  Statistics: ``search_kl`` (KL(target || pi)) and ``search_agreement`` (the policy's most
  likely action is the target's).
- **aux**: cross-entropy of the policy's aux head (``model.aux_classes``, read by
  ``forward_sequence_aux``) toward the class of what the opponent does in the turn
  (``aux_targets >= 0``, :mod:`mapleenv.opponent_action`). Its gradient shapes the shared
  features only; the policy never reads the head. PPO only. docs/training.md, "Auxiliary
  opponent-action head".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from mapleenv.policies import log_prob_entropy
from trainer.algos.buffer import ChunkBatch
from trainer.algos.episode_batch import EpisodeBatch

Batch = ChunkBatch | EpisodeBatch


@dataclass(frozen=True)
class TermInputs:
    """What a term reads, ``[L, B]`` each unless said: the replayed outputs and the targets."""

    logits: torch.Tensor  # masked logits ``[L, B, A]``
    action_mask: torch.Tensor  # ``[L, B, A]``
    valid: torch.Tensor  # 1 for steps of an episode, 0 for padding
    teacher_actions: torch.Tensor  # -1: no teacher action
    aux_logits: torch.Tensor | None = None  # the aux head's ``[L, B, K]`` (terms with aux_head)
    aux_targets: torch.Tensor | None = None  # -1: no label
    teacher_probs: torch.Tensor | None = None  # ``[L, B, A]`` search targets, zero rows: none


TermFn = Callable[[TermInputs], tuple[torch.Tensor, dict[str, torch.Tensor]]]


def _always(batch: Batch) -> bool:
    return True


@dataclass(frozen=True)
class LossTerm:
    """``coef * fn(inputs)[0]`` joins the loss when ``coef > 0``; ``<name>_loss`` and ``fn``'s
    statistics are logged whatever the weight. ``applies`` says whether a whole batch holds
    the term's targets (else the update skips the term, statistics too); ``aux_head``: the
    replay must run the policy's aux head."""

    name: str
    coef: float
    fn: TermFn
    applies: Callable[[Batch], bool] = _always
    aux_head: bool = False


def add_terms(
    loss: torch.Tensor, terms: Sequence[LossTerm], inputs: TermInputs
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``loss`` plus the weighted terms, in order, and their statistics."""
    stats: dict[str, torch.Tensor] = {}
    for term in terms:
        value, extra = term.fn(inputs)
        if term.coef > 0:
            loss = loss + term.coef * value
        stats |= {f"{term.name}_loss": value, **extra}
    return loss, stats


def teacher_log_prob(
    logits: torch.Tensor, action_mask: torch.Tensor, teacher: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``log pi(teacher action)`` (0 where there is none) and 1 where the most likely action
    is the teacher's."""
    logp, _ = log_prob_entropy(logits, action_mask, teacher.clamp(min=0))
    return torch.where(teacher >= 0, logp, 0.0), (logits.argmax(-1) == teacher).float()


def kickstart_loss(inputs: TermInputs) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``-mean log pi(teacher action)`` and the agreement with the teacher over the taught
    steps (valid steps that have a teacher action)."""
    teacher = inputs.teacher_actions
    teacher_logp, teacher_agree = teacher_log_prob(inputs.logits, inputs.action_mask, teacher)
    taught = inputs.valid * (teacher >= 0)
    count = taught.sum().clamp(min=1.0)
    loss = -(teacher_logp * taught).sum() / count
    return loss, {"teacher_agreement": (teacher_agree * taught).sum() / count}


def aux_loss(inputs: TermInputs) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Mean cross-entropy and accuracy of the aux logits toward their targets over the
    valid steps that have a label (``aux_targets >= 0``)."""
    logits, targets = inputs.aux_logits, inputs.aux_targets
    if logits is None or targets is None:
        raise ValueError("the aux term needs the aux head's logits and the batch's aux targets")
    labelled = inputs.valid * (targets >= 0)
    count = labelled.sum().clamp(min=1.0)
    ce = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.clamp(min=0).reshape(-1), reduction="none"
    ).view_as(labelled)
    hits = (logits.argmax(-1) == targets).float()
    return (ce * labelled).sum() / count, {"aux_accuracy": (hits * labelled).sum() / count}


def search_loss(inputs: TermInputs) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Mean cross-entropy of the policy toward the search's targets over the valid steps
    that have one, with the KL and the argmax agreement."""
    target = inputs.teacher_probs
    if target is None:
        raise ValueError("the search term needs the batch's teacher_probs")
    target = target.float()
    log_probs = torch.log_softmax(inputs.logits.float(), dim=-1)
    taught = inputs.valid * (target.sum(-1) > 0)
    count = taught.sum().clamp(min=1.0)
    on_target = target > 0  # masked actions (log pi = -inf) never have target mass
    ce = -(target * torch.where(on_target, log_probs, 0.0)).sum(-1)
    entropy = -(target * torch.where(on_target, target.clamp(min=1e-12).log(), 0.0)).sum(-1)
    agree = (inputs.logits.argmax(-1) == target.argmax(-1)).float()
    return (ce * taught).sum() / count, {
        "search_kl": ((ce - entropy) * taught).sum() / count,
        "search_agreement": (agree * taught).sum() / count,
    }


def _has_search_target(batch: Batch) -> bool:
    return bool((batch.teacher_probs.sum(-1) > 0).any())


def search_term(coef: float) -> LossTerm:
    """The search term at weight ``coef`` (skipped on a batch with no search target)."""
    return LossTerm("search", coef, search_loss, applies=_has_search_target)


def _has_teacher(batch: Batch) -> bool:
    return bool((batch.teacher_actions >= 0).any())


def kickstart_term(coef: float) -> LossTerm:
    """The kickstarting term at weight ``coef`` (skipped on a batch with no teacher action)."""
    return LossTerm("kickstart", coef, kickstart_loss, applies=_has_teacher)


def aux_term(coef: float) -> LossTerm:
    """The auxiliary opponent-action term at weight ``coef``."""
    return LossTerm("aux", coef, aux_loss, aux_head=True)
