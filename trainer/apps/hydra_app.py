"""The one Hydra entry of Maple's three config-driven CLIs: ``maple-train``
(``python -m trainer``), ``maple-evaluate`` (``python -m trainer.evaluate``) and
``maple-play`` (``python -m trainer.play``).

The configs are found on Hydra's package search path, ``pkg://maple_conf``: the top-level
``conf/`` folder of the source tree ships in the wheel as the package ``maple_conf``
(``pyproject.toml``'s ``package-dir``), and an editable install of a checkout maps the same
name onto its ``conf/``. So the commands work from any folder, installed or not. A checkout
whose editable install predates that mapping reads its ``conf/`` folder directly.

Every CLI reports bad input the same way: one ``[ERROR]`` line of its logger and exit code
2, for Hydra's composition errors (:mod:`trainer.cli_errors`) and for the exceptions the
CLI names as bad input.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

CONF_PACKAGE = "maple_conf"
_CHECKOUT_CONF = Path(__file__).resolve().parents[2] / "conf"


def config_path() -> str:
    """Hydra's ``config_path`` for the CLIs: ``pkg://maple_conf`` (the wheel's configs, or the
    checkout's ``conf/`` through its editable install)."""
    if importlib.util.find_spec(CONF_PACKAGE) is not None:
        return f"pkg://{CONF_PACKAGE}"
    return str(_CHECKOUT_CONF)


def conf_dir() -> Path:
    """The configs' folder on disk (for Hydra's compose API in tests and scripts)."""
    spec = importlib.util.find_spec(CONF_PACKAGE)
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return _CHECKOUT_CONF


def run_app(
    config_name: str,
    logger: str,
    body: Callable[[Any], None],
    bad_input: tuple[type[BaseException], ...],
) -> None:
    """Run ``body(cfg)`` as a Hydra app over ``<configs>/<config_name>.yaml``.

    ``--help``/``--cfg`` into a closed pipe end quietly; a bad override, or an exception of
    ``bad_input`` raised by ``body``, is one error line of ``logger`` and exit code 2. Hydra
    names the job (and the run dir's ``<job>.log``) after ``body``'s module, as when each
    CLI declared its own ``@hydra.main``: ``__main__``, ``evaluate``, ``play``.
    """
    import hydra

    from trainer.apps.pipes import quiet_closed_pipe
    from trainer.cli_errors import one_line_config_errors

    quiet_closed_pipe(sys.argv[1:])
    one_line_config_errors(logger)
    log = logging.getLogger(logger)

    def task(cfg: Any) -> None:
        try:
            body(cfg)
        except bad_input as exc:
            log.error("%s", exc)
            sys.exit(2)

    task.__module__ = _module_name(body)
    hydra.main(version_base="1.3", config_path=config_path(), config_name=config_name)(task)()


def _module_name(func: Callable[..., Any]) -> str:
    """``func``'s module by its import name (``trainer.__main__`` under ``python -m trainer``)."""
    name = func.__module__
    if name == "__main__":
        spec = getattr(sys.modules.get("__main__"), "__spec__", None)
        if spec is not None and spec.name:
            return spec.name
    return name
