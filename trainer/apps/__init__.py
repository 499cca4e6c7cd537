"""The command-line apps beside training: evaluation (``python -m trainer.evaluate``) and
live play on a Showdown server (``python -m trainer.play``)."""
