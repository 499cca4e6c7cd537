"""``maple-convert-checkpoint`` from a checkout
(``python scripts/checkpoint/convert_checkpoint.py --help``).

The command lives in :mod:`trainer.apps.convert_checkpoint` (its ``--help`` is the whole text).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout's packages

from trainer.apps.convert_checkpoint import main  # noqa: E402

if __name__ == "__main__":
    main()
