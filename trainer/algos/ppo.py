"""Sequence PPO: the pure loss (:func:`ppo_losses`) and the update loop over BPTT chunks.

:func:`ppo_losses` is the algorithm (clipped surrogate, clipped value loss, entropy bonus) on
tensors; :func:`ppo_update` replays chunks, adds the optional kickstarting term and steps
the optimizer.

Optional kickstarting (Schmitt et al., 2018, "Kickstarting Deep Reinforcement Learning"):
with ``kickstart_coef > 0`` the loss adds ``kickstart_coef * -log pi(teacher_action)``
over the steps that have a teacher action (``ChunkBatch.teacher_actions >= 0``), i.e. a
cross-entropy toward a teacher policy (e.g. poke-env's heuristic player) whose weight the
trainer anneals to zero, so the agent starts from the teacher's play and PPO takes over.
With ``aux_coef > 0`` it adds the auxiliary opponent-action loss (:mod:`trainer.algos.aux`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import nn

from mapleenv.policies import ActorCritic, log_prob_entropy
from trainer.algos.aux import aux_terms
from trainer.algos.buffer import ChunkBatch
from trainer.algos.kickstart import kickstart_terms, teacher_log_prob
from trainer.config import PPOConfig


@dataclass
class MinibatchEval:
    """The policy's outputs on a minibatch of chunks, ``[L, B]`` each."""

    logp: torch.Tensor
    entropy: torch.Tensor
    values: torch.Tensor
    teacher_logp: torch.Tensor  # log pi(teacher action); 0 where there is none
    teacher_agree: torch.Tensor  # 1 where the most likely action is the teacher's
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
    teacher_logp, teacher_agree = teacher_log_prob(
        logits, batch.action_mask[:, idx], batch.teacher_actions[:, idx]
    )
    return MinibatchEval(
        logp=logp,
        entropy=entropy,
        values=values,
        teacher_logp=teacher_logp,
        teacher_agree=teacher_agree,
        aux_logits=aux_logits,
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


def ppo_update(
    policy: ActorCritic,
    optimizer: torch.optim.Optimizer,
    batch: ChunkBatch,
    cfg: PPOConfig,
    generator: torch.Generator | None = None,
    autocast_bf16: bool = False,
    kickstart_coef: float = 0.0,
    pg_coef: float = 1.0,
    aux_coef: float = 0.0,
) -> dict[str, float]:
    """Run ``cfg.epochs`` epochs of minibatches of chunks; returns mean statistics
    (with ``kickstart_loss`` and ``teacher_agreement`` when the batch has teacher actions,
    ``aux_loss`` and ``aux_accuracy`` with ``aux_coef > 0``).
    ``pg_coef=0`` is behaviour cloning (``algo.bc_steps``): see :func:`ppo_losses`."""
    num_mb = max(1, min(cfg.num_minibatches, batch.num_chunks))
    advantages = _normalized_advantages(batch) if cfg.norm_adv else batch.advantages
    autocast = (
        torch.autocast(device_type=batch.obs.device.type, dtype=torch.bfloat16)
        if autocast_bf16
        else contextlib.nullcontext()
    )
    has_teacher = batch.teacher_actions >= 0
    with_teacher = bool(has_teacher.any())
    stats: dict[str, list[torch.Tensor]] = {}
    epochs_run = 0
    for _ in range(cfg.epochs):
        epochs_run += 1
        perm = torch.randperm(batch.num_chunks, generator=generator).to(batch.obs.device)
        for idx in torch.tensor_split(perm, num_mb):
            valid = batch.valid[:, idx]
            with autocast:
                out = evaluate_chunks(policy, batch, idx, aux=aux_coef > 0)
            losses = ppo_losses(
                out.logp,
                batch.logp[:, idx],
                advantages[:, idx],
                out.values,
                batch.values[:, idx],
                batch.returns[:, idx],
                out.entropy,
                valid,
                cfg,
                pg_coef,
            )
            loss = losses.loss
            step_stats = losses._asdict()
            del step_stats["loss"]
            if with_teacher:
                kick_loss, agreement = kickstart_terms(
                    out.teacher_logp, out.teacher_agree, valid * has_teacher[:, idx]
                )
                if kickstart_coef > 0:
                    loss = loss + kickstart_coef * kick_loss
                step_stats |= {"kickstart_loss": kick_loss, "teacher_agreement": agreement}
            if out.aux_logits is not None:
                aux = aux_terms(out.aux_logits, batch.aux_targets[:, idx], valid)
                loss = loss + aux_coef * aux[0]
                step_stats |= {"aux_loss": aux[0], "aux_accuracy": aux[1]}

            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if cfg.grad_clip_norm > 0:
                nn.utils.clip_grad_norm_(policy.parameters(), cfg.grad_clip_norm)
            optimizer.step()

            for key, value in step_stats.items():
                stats.setdefault(key, []).append(value.detach().float())
            if cfg.target_kl is not None and float(losses.approx_kl) > cfg.target_kl:
                break
        else:
            continue
        break  # target_kl reached
    means = torch.stack([torch.stack(v).mean() for v in stats.values()]).tolist()
    result = dict(zip(stats, means, strict=True))
    result["epochs"] = float(epochs_run)
    result["explained_variance"] = explained_variance(batch.values, batch.returns, batch.valid)
    return result
