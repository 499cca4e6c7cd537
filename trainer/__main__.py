"""CLI: ``python -m trainer +experiment=lstm_ppo device=cpu`` (Hydra; ``-m`` for sweeps)."""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

import trainer.config  # noqa: F401  (registers the typed schemas)
from mapleenv.vector import ShardFailedError  # plain import; Ray is imported only by shards
from trainer.config import ConfigError
from trainer.envs.vector import EnvPoolFailed, EnvWorkerDied, EnvWorkersFailing, EnvWorkerStalled
from trainer.run.checkpoint import CHECKPOINT_DIR, LAST, CheckpointError

CONF_DIR = str(Path(__file__).resolve().parent.parent / "conf")
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


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def _hydra_main(cfg: DictConfig) -> None:
    from trainer.run.train import train

    run_dir = HydraConfig.get().runtime.output_dir
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        train(cfg, run_dir)
    except (ConfigError, CheckpointError, FileNotFoundError) as exc:  # bad input: one line
        log.error("%s", exc)
        sys.exit(2)
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
    """Console-script entry point (``maple-train``)."""
    from trainer.apps.pipes import quiet_closed_pipe
    from trainer.cli_errors import one_line_config_errors

    quiet_closed_pipe(sys.argv[1:])
    one_line_config_errors("trainer")
    _hydra_main()


if __name__ == "__main__":
    main()
