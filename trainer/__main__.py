"""CLI: ``python -m trainer +experiment=lstm_ppo device=cpu`` (Hydra; ``-m`` for sweeps)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

import trainer.config  # noqa: F401  (registers the typed schemas)
from trainer.config import ConfigError

CONF_DIR = str(Path(__file__).resolve().parent.parent / "conf")
log = logging.getLogger("trainer")


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def _hydra_main(cfg: DictConfig) -> None:
    from trainer.train import train

    try:
        train(cfg, HydraConfig.get().runtime.output_dir)
    except ConfigError as exc:
        log.error("%s", exc)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)


def main() -> None:
    """Console-script entry point (``maple-train``)."""
    _hydra_main()


if __name__ == "__main__":
    main()
