"""Maple learning side: policies, rollout storage, sequence PPO, training loop."""
