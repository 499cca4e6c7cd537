"""Two policies learn against each other on ``mapleenv.parallel_env`` (PettingZoo).

Each seat ("p1", "p2") has its own small MLP (masked softmax over the legal actions),
trained with REINFORCE on the outcome of its own battles (+1 win, -1 loss). Only the
steps where an agent had a decision (``info["needs_action"]``) enter its loss.

    python examples/selfplay_pettingzoo.py --rounds 20 --battles 8
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

import mapleenv


class Policy(torch.nn.Module):
    def __init__(self, obs_dim: int, n_actions: int, hidden: int = 64):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(obs_dim, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, n_actions)
        )

    def dist(self, obs: dict[str, np.ndarray]) -> torch.distributions.Categorical:
        logits = self.net(torch.as_tensor(obs["observation"]))
        mask = torch.as_tensor(obs["action_mask"], dtype=torch.bool)
        return torch.distributions.Categorical(logits=logits.masked_fill(~mask, -torch.inf))


def play_battle(env, policies: dict[str, Policy]) -> tuple[dict, dict]:
    """One battle; each agent's log-probabilities of its decisions and its return."""
    obs, infos = env.reset()
    log_probs: dict[str, list[torch.Tensor]] = {agent: [] for agent in env.possible_agents}
    returns = dict.fromkeys(env.possible_agents, 0.0)
    while env.agents:
        actions = {}
        for agent in env.agents:
            dist = policies[agent].dist(obs[agent])
            action = dist.sample()
            actions[agent] = int(action)
            if infos[agent]["needs_action"]:  # otherwise the action is ignored
                log_probs[agent].append(dist.log_prob(action))
        obs, rewards, _, _, infos = env.step(actions)
        for agent, reward in rewards.items():
            returns[agent] += reward
    return log_probs, returns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--battles", type=int, default=8, help="battles per round")
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    env = mapleenv.parallel_env(seed=args.seed)
    obs_dim = env.observation_space("p1")["observation"].shape[0]
    n_actions = env.action_space("p1").n
    policies = {agent: Policy(obs_dim, n_actions) for agent in env.possible_agents}
    optimizers = {a: torch.optim.Adam(p.parameters(), lr=args.lr) for a, p in policies.items()}
    try:
        for round_ in range(1, args.rounds + 1):
            losses = {agent: torch.zeros(()) for agent in policies}
            p1_wins = 0
            for _ in range(args.battles):
                log_probs, returns = play_battle(env, policies)
                p1_wins += returns["p1"] > 0
                for agent, terms in log_probs.items():
                    if terms:
                        losses[agent] = losses[agent] - returns[agent] * torch.stack(terms).sum()
            for agent, optimizer in optimizers.items():
                if not losses[agent].requires_grad:  # no decision at all this round
                    continue
                optimizer.zero_grad()
                (losses[agent] / args.battles).backward()
                optimizer.step()
            print(f"round {round_:3d}: p1 won {p1_wins}/{args.battles}")
    finally:
        env.close()


if __name__ == "__main__":
    main()
