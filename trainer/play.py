"""``python -m trainer.play``, live play on a Showdown server (docs/play.md), beside the console
script ``maple-play``. The code lives in :mod:`trainer.apps.play`; this module keeps the ``-m``
name put."""

from trainer.apps.play import main, run

__all__ = ["main", "run"]

if __name__ == "__main__":
    main()
