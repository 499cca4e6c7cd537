"""Public entry point, part of the public face whose Python API is contract 7 of
../shared/DESIGN.md: ``python -m trainer.play`` (README's command, beside the console script),
live play on a Showdown server. A thin re-export of :mod:`trainer.apps.play`, where the code
lives; add no logic here."""

from trainer.apps.play import main, run

__all__ = ["main", "run"]

if __name__ == "__main__":
    main()
