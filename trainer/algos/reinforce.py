"""Sequence REINFORCE: the pure loss (:func:`reinforce_losses`) and the update on episodes.

Williams' (1992) policy gradient on complete episodes (:class:`trainer.algos.episode_batch.
EpisodeBatch`): Monte-Carlo returns ``G_t = r_t + gamma * G_{t+1}`` (a time-limit truncation
bootstraps from ``V(final obs)`` when there is a learned baseline), the loss
``-log pi(a_t) * A_t`` with ``A_t = G_t - V(s_t)`` (``algo.baseline``) or ``G_t``, an entropy
bonus, the baseline's squared error, and gradient-norm clipping. One gradient step per
rollout, every episode replayed from its start with a zero recurrent state; ``algo.bptt`` > 0
cuts the gradient (not the state) every ``bptt`` steps.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import nn

from mapleenv.policies import Hidden, log_prob_entropy
from trainer.algos.episode_batch import EpisodeBatch
from trainer.algos.terms import LossTerm, TermInputs, add_terms
from trainer.config import ReinforceConfig


def discounted_returns(
    rewards: torch.Tensor, valid: torch.Tensor, bootstrap: torch.Tensor, gamma: float
) -> torch.Tensor:
    """``G_t`` for episodes in columns (``[L, E]``, padding where ``valid`` is 0): the
    return after an episode's last step is ``bootstrap`` ``[E]``."""
    returns = torch.zeros_like(rewards)
    running = bootstrap.clone()
    for t in reversed(range(rewards.shape[0])):
        # padding steps keep the bootstrap in place until the episode's last real step
        running = torch.where(valid[t].bool(), rewards[t] + gamma * running, running)
        returns[t] = running
    return returns * valid


class ReinforceLosses(NamedTuple):
    """The REINFORCE loss and its parts (scalars)."""

    loss: torch.Tensor  # pg_coef * (policy_loss - ent_coef * entropy) + vf_coef * value_loss
    policy_loss: torch.Tensor
    value_loss: torch.Tensor
    entropy: torch.Tensor


def reinforce_losses(
    *,
    logp: torch.Tensor,
    values: torch.Tensor,
    returns: torch.Tensor,
    entropy: torch.Tensor,
    valid: torch.Tensor,
    cfg: ReinforceConfig,
    pg_coef: float = 1.0,
) -> ReinforceLosses:
    """REINFORCE over the ``valid`` steps (all ``[L, E]``). With ``cfg.baseline`` the
    advantage is ``returns - values`` (values detached there, trained by the value loss);
    ``cfg.norm_adv`` standardizes it over the batch."""
    count = valid.sum().clamp(min=1.0)
    keep = valid.bool()
    advantages = returns - values.detach() if cfg.baseline else returns
    if cfg.norm_adv and int(keep.sum()) > 1:
        adv = advantages[keep]
        advantages = (advantages - adv.mean()) / (adv.std() + 1e-8)
    pg_loss = -(logp * advantages * valid).sum() / count
    if cfg.baseline:
        v_loss = 0.5 * (((values - returns) ** 2) * valid).sum() / count
    else:
        v_loss = torch.zeros((), device=logp.device)
    entropy_mean = (entropy * valid).sum() / count
    loss = pg_coef * (pg_loss - cfg.ent_coef * entropy_mean) + cfg.vf_coef * v_loss
    return ReinforceLosses(loss, pg_loss, v_loss, entropy_mean)


def _detach(hidden: Hidden) -> Hidden:
    return tuple(h.detach() for h in hidden)


def replay_episodes(
    policy: nn.Module, batch: EpisodeBatch, bptt: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits ``[L, E, A]`` and values ``[L, E]`` of every step, each episode from a zero
    state; with ``bptt`` > 0 the state passes between windows of ``bptt`` steps detached
    (truncated backpropagation), else one pass over whole episodes."""
    length = batch.valid.shape[0]
    window = bptt if bptt > 0 else length
    hidden = policy.initial_state(batch.num_episodes, batch.obs.device)
    logits, values = [], []
    for s in range(0, length, window):
        part = slice(s, s + window)
        out_logits, out_values, hidden = policy(
            batch.obs[part], batch.action_mask[part], hidden, batch.episode_start[part]
        )
        hidden = _detach(hidden)
        logits.append(out_logits)
        values.append(out_values)
    return torch.cat(logits), torch.cat(values)


def reinforce_update(
    policy: nn.Module,
    optimizer: torch.optim.Optimizer,
    batch: EpisodeBatch,
    cfg: ReinforceConfig,
    *,
    terms: Sequence[LossTerm] = (),
    pg_coef: float = 1.0,
    autocast_bf16: bool = False,
) -> dict[str, float]:
    """One gradient step on ``batch``; returns statistics, each term's (``<name>_loss`` and
    its own) among them. A term that does not apply to the batch is left out; one that needs
    the aux head is an error (REINFORCE does not train it)."""
    terms = [term for term in terms if term.applies(batch)]
    if any(term.aux_head for term in terms):
        raise ValueError("REINFORCE does not replay the aux head: aux terms need algo=ppo")
    autocast = (
        torch.autocast(device_type=batch.obs.device.type, dtype=torch.bfloat16)
        if autocast_bf16
        else contextlib.nullcontext()
    )
    with autocast:
        logits, values = replay_episodes(policy, batch, cfg.bptt)
    logits, values = logits.float(), values.float()
    logp, entropy = log_prob_entropy(logits, batch.action_mask, batch.actions)
    returns = discounted_returns(
        batch.rewards,
        batch.valid,
        batch.bootstrap if cfg.baseline else 0 * batch.bootstrap,
        cfg.gamma,
    )
    losses = reinforce_losses(
        logp=logp,
        values=values,
        returns=returns,
        entropy=entropy,
        valid=batch.valid,
        cfg=cfg,
        pg_coef=pg_coef,
    )
    loss, term_stats = add_terms(
        losses.loss,
        terms,
        TermInputs(
            logits=logits,
            action_mask=batch.action_mask,
            valid=batch.valid,
            teacher_actions=batch.teacher_actions,
            teacher_probs=batch.teacher_probs,
        ),
    )
    stats = {k: v.detach() for k, v in (losses._asdict() | term_stats).items() if k != "loss"}

    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if cfg.grad_clip_norm > 0:
        nn.utils.clip_grad_norm_(policy.parameters(), cfg.grad_clip_norm)
    optimizer.step()

    result = {k: float(v) for k, v in stats.items()}
    keep = batch.valid.bool()
    var = torch.var(returns[keep]) if int(keep.sum()) > 1 else torch.tensor(0.0)
    result["explained_variance"] = (
        float(1.0 - torch.var((returns - values.detach())[keep]) / var) if var > 0 else float("nan")
    )
    result["episodes_trained"] = float(batch.num_episodes)
    return result
