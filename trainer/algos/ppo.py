"""Sequence PPO: the pure loss (:func:`ppo_losses`) and the update loop over BPTT chunks.

:func:`ppo_losses` is the algorithm (clipped surrogate, clipped value loss, entropy bonus) on
tensors, called with keywords; :func:`ppo_update` reads top to bottom like CleanRL's
``ppo_atari_lstm.py``: for each epoch, for each minibatch of chunks, replay the chunks, the
PPO loss plus the extra terms it is given (:mod:`trainer.algos.terms`: kickstarting, the aux
head), one optimizer step, and the approx-KL early stop.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import nn

from mapleenv.policies import ActorCritic, log_prob_entropy
from trainer.algos.buffer import ChunkBatch
from trainer.algos.terms import LossTerm, TermInputs, add_terms
from trainer.config import PPOConfig


@dataclass
class MinibatchEval:
    """The policy's outputs on a minibatch of chunks, ``[L, B]`` each."""

    logp: torch.Tensor
    entropy: torch.Tensor
    values: torch.Tensor
    logits: torch.Tensor  # masked, ``[L, B, A]``
    aux_logits: torch.Tensor | None = None  # the aux head's ``[L, B, K]`` (when asked for)


def evaluate_chunks(
    policy: ActorCritic, batch: ChunkBatch, idx: torch.Tensor, aux: bool = False
) -> MinibatchEval:
    """Replay chunks ``idx`` from their stored start states, one batched forward (``aux``:
    through ``forward_sequence_aux``, which also gives the aux head's logits).

    The same episode-start masks as in the rollout reset the state inside chunks, so before
    any update the log-probs equal the rollout's.
    """
    hidden = tuple(h[:, idx] for h in batch.hidden)
    inputs = (batch.obs[:, idx], batch.action_mask[:, idx], hidden, batch.episode_start[:, idx])
    aux_logits = None
    if aux:
        logits, values, _, aux_logits = policy.forward_sequence_aux(*inputs)
    else:
        logits, values, _ = policy(*inputs)
    logp, entropy = log_prob_entropy(logits, batch.action_mask[:, idx], batch.actions[:, idx])
    return MinibatchEval(
        logp=logp, entropy=entropy, values=values, logits=logits, aux_logits=aux_logits
    )


def _masked_mean(x: torch.Tensor, mask: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    return (x * mask).sum() / count


class PPOLosses(NamedTuple):
    """The PPO loss and its parts (scalars)."""

    loss: torch.Tensor  # pg_coef * (policy_loss - ent_coef * entropy) + vf_coef * value_loss
    policy_loss: torch.Tensor
    value_loss: torch.Tensor
    entropy: torch.Tensor
    approx_kl: torch.Tensor  # detached
    clip_frac: torch.Tensor  # detached


def ppo_losses(
    *,
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    entropy: torch.Tensor,
    valid: torch.Tensor,
    cfg: PPOConfig,
    pg_coef: float = 1.0,
) -> PPOLosses:
    """PPO's clipped objective over the ``valid`` steps (all tensors ``[L, B]``).

    ``pg_coef`` scales the policy-gradient and entropy terms (0: only the value loss, as in
    behaviour cloning, where the kickstarting cross-entropy is the policy's loss)."""
    count = valid.sum().clamp(min=1.0)
    logratio = logp - old_logp
    ratio = logratio.exp()
    pg_loss = _masked_mean(
        torch.max(
            -advantages * ratio,
            -advantages * ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef),
        ),
        valid,
        count,
    )
    v_loss = (values - returns) ** 2
    if cfg.clip_vloss:
        v_clipped = old_values + (values - old_values).clamp(-cfg.clip_coef, cfg.clip_coef)
        v_loss = torch.max(v_loss, (v_clipped - returns) ** 2)
    v_loss = 0.5 * _masked_mean(v_loss, valid, count)
    entropy_mean = _masked_mean(entropy, valid, count)
    loss = pg_coef * (pg_loss - cfg.ent_coef * entropy_mean) + cfg.vf_coef * v_loss
    with torch.no_grad():
        approx_kl = _masked_mean((ratio - 1) - logratio, valid, count)
        clip_frac = _masked_mean(((ratio - 1).abs() > cfg.clip_coef).float(), valid, count)
    return PPOLosses(loss, pg_loss, v_loss, entropy_mean, approx_kl, clip_frac)


def explained_variance(values: torch.Tensor, returns: torch.Tensor, valid: torch.Tensor) -> float:
    """``1 - Var(returns - values) / Var(returns)`` over valid steps (NaN if undefined)."""
    keep = valid.bool()
    y, pred = returns[keep], values[keep]
    if y.numel() < 2:
        return float("nan")
    var_y = torch.var(y)
    return float("nan") if var_y == 0 else float(1.0 - torch.var(y - pred) / var_y)


def _normalized_advantages(batch: ChunkBatch) -> torch.Tensor:
    keep = batch.valid.bool()
    adv = batch.advantages[keep]
    return (batch.advantages - adv.mean()) / (adv.std() + 1e-8) * batch.valid


def _autocast(device: torch.device, bf16: bool) -> contextlib.AbstractContextManager:
    if not bf16:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def ppo_update(
    policy: ActorCritic,
    optimizer: torch.optim.Optimizer,
    batch: ChunkBatch,
    cfg: PPOConfig,
    *,
    terms: Sequence[LossTerm] = (),
    pg_coef: float = 1.0,
    generator: torch.Generator | None = None,
    autocast_bf16: bool = False,
) -> dict[str, float]:
    """Run ``cfg.epochs`` epochs of minibatches of chunks; returns mean statistics, each
    term's (``<name>_loss`` and its own) among them. A term that does not apply to the batch
    (:class:`trainer.algos.terms.LossTerm`) is left out, statistics too.
    ``pg_coef=0`` is behaviour cloning (``algo.bc_steps``): see :func:`ppo_losses`."""
    terms = [term for term in terms if term.applies(batch)]
    aux = any(term.aux_head for term in terms)
    num_mb = max(1, min(cfg.num_minibatches, batch.num_chunks))
    advantages = _normalized_advantages(batch) if cfg.norm_adv else batch.advantages
    autocast = _autocast(batch.obs.device, autocast_bf16)
    stats: dict[str, list[torch.Tensor]] = {}
    epochs_run, kl_reached = 0, False
    for _ in range(cfg.epochs):
        epochs_run += 1
        perm = torch.randperm(batch.num_chunks, generator=generator).to(batch.obs.device)
        for idx in torch.tensor_split(perm, num_mb):
            valid = batch.valid[:, idx]
            with autocast:
                out = evaluate_chunks(policy, batch, idx, aux=aux)
            losses = ppo_losses(
                logp=out.logp,
                old_logp=batch.logp[:, idx],
                advantages=advantages[:, idx],
                values=out.values,
                old_values=batch.values[:, idx],
                returns=batch.returns[:, idx],
                entropy=out.entropy,
                valid=valid,
                cfg=cfg,
                pg_coef=pg_coef,
            )
            loss, term_stats = add_terms(
                losses.loss,
                terms,
                TermInputs(
                    logits=out.logits,
                    action_mask=batch.action_mask[:, idx],
                    valid=valid,
                    teacher_actions=batch.teacher_actions[:, idx],
                    teacher_probs=batch.teacher_probs[:, idx],
                    aux_logits=out.aux_logits,
                    aux_targets=batch.aux_targets[:, idx],
                ),
            )

            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if cfg.grad_clip_norm > 0:
                nn.utils.clip_grad_norm_(policy.parameters(), cfg.grad_clip_norm)
            optimizer.step()

            for key, value in (losses._asdict() | term_stats).items():
                if key != "loss":
                    stats.setdefault(key, []).append(value.detach().float())
            kl_reached = cfg.target_kl is not None and float(losses.approx_kl) > cfg.target_kl
            if kl_reached:
                break  # approx-KL early stop: no further minibatch ...
        if kl_reached:
            break  # ... and no further epoch
    means = torch.stack([torch.stack(v).mean() for v in stats.values()]).tolist()
    result = dict(zip(stats, means, strict=True))
    result["epochs"] = float(epochs_run)
    result["explained_variance"] = explained_variance(batch.values, batch.returns, batch.valid)
    return result
