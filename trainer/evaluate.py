"""``python -m trainer.evaluate``: the evaluation CLI (:mod:`trainer.apps.evaluate`)."""

from trainer.apps.evaluate import main, run

__all__ = ["main", "run"]

if __name__ == "__main__":
    main()
