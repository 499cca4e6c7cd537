"""Maple learning side: policies, rollout storage, sequence PPO, training loop."""

import trainer.resolvers  # noqa: F401  (conf/config.yaml's resolvers, in every process)
