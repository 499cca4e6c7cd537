"""The learning algorithms: rollout storage, recurrent replay, the pure losses and their
update loops (sequence PPO, sequence REINFORCE), kickstarting and reward normalization.
:func:`make_learner` picks one by ``algo.name``."""

from trainer.algos.learner import ALGORITHMS, Learner, make_learner

__all__ = ["ALGORITHMS", "Learner", "make_learner"]
