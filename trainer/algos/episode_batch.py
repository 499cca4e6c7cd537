"""Complete episodes out of fixed-length rollouts, for algorithms that need whole episodes.

A rollout of ``T`` steps per env cuts episodes at its edges. :class:`EpisodeCarry` turns each
rollout into the episodes that *ended* in it: the unfinished tail of every env is carried
over and prepended to that env's next rollout, so an episode is trained once, whole, and two
episodes are never mixed in one sequence. The result is an :class:`EpisodeBatch`, one episode
per column, padded to the longest (``valid`` marks real steps), every column starting at an
episode start.

Carried steps were collected by an earlier policy (at most a few updates old); their
log-probabilities are not reused, the update re-evaluates every step. Resume starts with an
empty carry: the envs start new episodes anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from trainer.algos.buffer import RolloutBuffer

# per-step fields carried over, in RolloutBuffer attribute names
_FIELDS = ("obs", "action_mask", "actions", "teacher_actions", "teacher_probs", "final_values")
_FLAGS = ("rewards", "terminated", "truncated", "has_final_value")


@dataclass
class EpisodeBatch:
    """Complete episodes, ``[L, E, ...]`` tensors (``L``: the longest episode)."""

    obs: torch.Tensor
    action_mask: torch.Tensor
    actions: torch.Tensor
    teacher_actions: torch.Tensor  # -1: no teacher action
    teacher_probs: torch.Tensor  # ``[L, E, A]`` the search teacher's target, zeros: none
    rewards: torch.Tensor
    valid: torch.Tensor  # 1 for the episode's steps, 0 for padding
    episode_start: torch.Tensor  # 1 at t = 0
    # bootstrap value after the last step: V(final obs) for a truncated episode, else 0
    bootstrap: torch.Tensor  # [E]
    truncated: torch.Tensor  # [E] bool: the episode was cut by a time limit

    @property
    def num_episodes(self) -> int:
        return self.valid.shape[1]

    @property
    def lengths(self) -> torch.Tensor:
        return self.valid.sum(0)


class EpisodeCarry:
    """Cuts rollouts into complete episodes and carries unfinished ones over (module docs)."""

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs
        # per env: the unfinished episode's steps so far, one dict of [t, ...] arrays
        self._tails: list[dict[str, torch.Tensor] | None] = [None] * num_envs

    @property
    def carried_steps(self) -> int:
        """Steps held over for the next rollout."""
        return sum(len(t["actions"]) for t in self._tails if t is not None)

    def reset(self) -> None:
        self._tails = [None] * self.num_envs

    def _column(self, buffer: RolloutBuffer, n: int) -> dict[str, torch.Tensor]:
        device = buffer.device
        col = {name: getattr(buffer, name)[:, n] for name in _FIELDS}
        for name in _FLAGS:
            col[name] = torch.from_numpy(np.ascontiguousarray(getattr(buffer, name)[:, n])).to(
                device
            )
        return col

    def episodes(self, buffer: RolloutBuffer) -> EpisodeBatch | None:
        """The episodes that ended in ``buffer`` (with their carried heads); ``None`` if none."""
        done_all = buffer.terminated | buffer.truncated
        finished: list[dict[str, torch.Tensor]] = []
        for n in range(self.num_envs):
            col = self._column(buffer, n)
            tail = self._tails[n]
            start = 0
            for end in np.flatnonzero(done_all[:, n]):
                part = {k: v[start : end + 1] for k, v in col.items()}
                if tail is not None:
                    part = {k: torch.cat([tail[k], part[k]]) for k in part}
                    tail = None
                finished.append(part)
                start = int(end) + 1
            rest = {k: v[start:] for k, v in col.items()}
            if tail is not None:
                rest = {k: torch.cat([tail[k], rest[k]]) for k in rest}
            # clone: the buffer is overwritten by the next rollout
            keep = len(rest["actions"]) > 0
            self._tails[n] = {k: v.clone() for k, v in rest.items()} if keep else None
        return _pad(finished) if finished else None


def _pad(episodes: list[dict[str, torch.Tensor]]) -> EpisodeBatch:
    """Stack episodes as columns, padded to the longest."""
    length = max(len(e["actions"]) for e in episodes)

    def stack(name: str, fill: float | bool = 0) -> torch.Tensor:
        cols = []
        for e in episodes:
            x = e[name]
            pad = x.new_full((length - len(x), *x.shape[1:]), fill)
            cols.append(torch.cat([x, pad]))
        return torch.stack(cols, dim=1)

    lengths = torch.tensor([len(e["actions"]) for e in episodes])
    device = episodes[0]["actions"].device
    steps = torch.arange(length)[:, None]
    valid = (steps < lengths[None]).float().to(device)
    truncated = torch.stack([e["truncated"][-1] & ~e["terminated"][-1] for e in episodes])
    has_final = torch.stack([e["has_final_value"][-1] for e in episodes])
    final_values = torch.stack([e["final_values"][-1] for e in episodes])
    bootstrap = torch.where(truncated & has_final, final_values, 0.0)
    start = torch.zeros(length, len(episodes), device=device)
    start[0] = 1.0
    return EpisodeBatch(
        obs=stack("obs"),
        action_mask=stack("action_mask", True),
        actions=stack("actions"),
        teacher_actions=stack("teacher_actions", -1),
        teacher_probs=stack("teacher_probs"),
        rewards=stack("rewards").float(),
        valid=valid,
        episode_start=start,
        bootstrap=bootstrap.float(),
        truncated=truncated,
    )
