"""One training run: the loop (:mod:`~trainer.run.train`), rollout collection, self-play,
checkpoints, metrics and the device."""
