"""``python -m trainer.evaluate``, the evaluation command (docs/architecture.md, "Contracts", 5;
docs/evaluation.md), beside the console script ``maple-evaluate``. The code lives in
:mod:`trainer.apps.evaluate`; this module keeps the ``-m`` name put."""

from trainer.apps.evaluate import main, run

__all__ = ["main", "run"]

if __name__ == "__main__":
    main()
