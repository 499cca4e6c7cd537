"""CLI: ``python -m trainer +experiment=lstm_ppo device=cpu`` (Hydra; ``-m`` for sweeps)."""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

import trainer.config  # noqa: F401  (registers the typed schemas)
from mapleenv.policies import CHECKPOINT_DIR, LAST, CheckpointError  # torch-free names
from trainer.apps.hydra_app import conf_dir, run_app
from trainer.config import ConfigError

CONF_DIR = str(conf_dir())  # the configs on disk (the package maple_conf), for compose in tests
BAD_INPUT = (ConfigError, CheckpointError, FileNotFoundError)  # one line, exit code 2
log = logging.getLogger("trainer")
_MAIN_PID = os.getpid()


def _interrupt(signum: int, frame: object) -> None:
    """Ctrl-C or SIGTERM (a scheduler, ``kill``): stop with a final checkpoint, envs closed.

    Only the first signal interrupts; later ones are ignored so that they cannot break the
    final save or the clean-up on the way out. A forked env worker (Gymnasium's default
    context for ``env=gym``) inherits this handler: there the signal keeps its default
    meaning, so the trainer can terminate its workers quietly.
    """
    if os.getpid() != _MAIN_PID:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def _train(cfg: DictConfig) -> None:
    # imported once the settings passed their checks: a refused command never pays for
    # torch and the env stack (docs/architecture.md)
    from mapleenv.vector import ShardFailedError  # plain import; Ray only in shards
    from trainer.envs.vector import (
        EnvPoolFailed,
        EnvWorkerDied,
        EnvWorkersFailing,
        EnvWorkerStalled,
    )
    from trainer.preflight import preflight_checked
    from trainer.run.train import train

    run_dir = HydraConfig.get().runtime.output_dir
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        train(cfg, run_dir, checked=preflight_checked(cfg))
    except BAD_INPUT:
        raise  # one line and exit code 2 (run_app)
    except (
        ShardFailedError,
        EnvWorkerDied,
        EnvWorkerStalled,
        EnvWorkersFailing,
        EnvPoolFailed,
    ) as exc:
        log.error("%s%s", exc, resume_hint(run_dir))
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        if not _is_showdown_error(exc):
            raise
        # a server that refused the battles, no Node, ...: one line, and how to go on if the
        # run had saved a checkpoint already
        saved = _last_checkpoint(run_dir).is_file()
        log.error("%s%s", exc, resume_hint(run_dir) if saved else "")
        sys.exit(1)


def resume_hint(run_dir: str | Path) -> str:
    """The end of a stop line: where the last checkpoint is and how to continue."""
    return f"; last checkpoint: {_last_checkpoint(run_dir)} (continue with resume={run_dir})"


def _last_checkpoint(run_dir: str | Path) -> Path:
    return Path(run_dir) / CHECKPOINT_DIR / LAST


def _is_showdown_error(exc: BaseException) -> bool:
    """Whether ``exc`` is one of mapleenv's Showdown errors (without importing poke-env for
    runs that never touched Showdown)."""
    package = sys.modules.get("mapleenv.showdown.package")
    return package is not None and isinstance(exc, package.ShowdownError)


def main() -> None:
    """Console-script entry point (``maple-train``): Hydra app over ``conf/config.yaml``."""
    run_app("config", "trainer", _train, bad_input=BAD_INPUT)


if __name__ == "__main__":
    main()
