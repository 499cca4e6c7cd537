"""``python -m trainer.play``: live play on a Showdown server (:mod:`trainer.apps.play`)."""

from trainer.apps.play import main, run

__all__ = ["main", "run"]

if __name__ == "__main__":
    main()
