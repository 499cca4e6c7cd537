"""The shipped agent playing direct battles, decision by decision, for the search scripts
that look at each of its positions (search_eval_rank.py, search_replies.py): one loop for
them all, so each script holds only what it reads at a decision."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from mapleenv.env import PokemonEnv
from mapleenv.policies import load_checkpoint, policy_from_snapshot, snapshot_encoder

SHIPPED = Path(__file__).resolve().parents[2] / "models/attention_ppo_gen9random.pt"


def add_agent_arguments(parser: argparse.ArgumentParser, battles: int) -> None:
    """The arguments of :func:`agent_decisions`: --checkpoint, --battles, --opponent, --seed."""
    parser.add_argument("--checkpoint", default=str(SHIPPED), help="the agent")
    parser.add_argument("--battles", type=int, default=battles, help="battles to play")
    parser.add_argument("--opponent", default="heuristic", help="the other seat's player")
    parser.add_argument("--seed", type=int, default=0, help="battle and sampling seed")


@dataclasses.dataclass
class AgentDecision:
    """One decision of the agent: its env (the battle before the step), the battle's number
    and the network's value of the position."""

    env: PokemonEnv
    episode: int
    value: float


def agent_decisions(
    checkpoint: str, opponent: str, battles: int, seed: int, outcomes: dict[int, bool]
) -> Iterator[AgentDecision]:
    """Play ``battles`` gen9randombattle battles of the agent in ``checkpoint`` (its sampled
    actions, seeded) against ``opponent``, yielding before each of its decisions; the step is
    taken when the caller asks for the next one. ``outcomes`` gets each battle's result (won)
    as it ends."""
    snapshot: Any = load_checkpoint(checkpoint)
    policy = policy_from_snapshot(snapshot).eval()
    env = PokemonEnv(
        "gen9randombattle",
        opponent=opponent,
        encoder=snapshot_encoder(snapshot),
        backend="direct",
        seed=seed,
    )
    generator = torch.Generator().manual_seed(seed)
    try:
        for episode in range(battles):
            obs, _ = env.reset(seed=seed + episode)
            hidden, start = policy.initial_state(1), 1.0
            while True:
                with torch.inference_mode():
                    logits, value, hidden = policy(
                        torch.from_numpy(obs["observation"])[None],
                        torch.from_numpy(obs["action_mask"]).bool()[None],
                        hidden,
                        torch.tensor([start]),
                    )
                start = 0.0
                yield AgentDecision(env, episode, float(value.reshape(-1)[0]))
                probs = torch.softmax(logits[0].float(), dim=-1)
                action = int(torch.multinomial(probs, 1, generator=generator))
                obs, _, terminated, truncated, info = env.step(action)
                if terminated or truncated:
                    outcomes[episode] = bool(info.get("won"))
                    break
    finally:
        env.close()
