"""Public entry point, contract 5 of ../shared/DESIGN.md: ``python -m trainer.evaluate``, the
evaluation CLI (beside the console script). A thin re-export of :mod:`trainer.apps.evaluate`,
where the code lives; add no logic here."""

from trainer.apps.evaluate import main, run

__all__ = ["main", "run"]

if __name__ == "__main__":
    main()
