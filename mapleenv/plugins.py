"""Plugin modules: imported by name before envs, opponents or policies are built.

A plugin registers what it adds (:func:`mapleenv.encoders.register_encoder`,
:func:`mapleenv.opponents.register_opponent`, :func:`mapleenv.reward.register_reward`,
:func:`mapleenv.backends.register_backend`) when imported. Registries live per process, so
each env worker imports the plugins itself (``PokemonEnv(plugins=...)``); the trainer
passes its ``env.plugins`` there (``docs/extending.md``).

Plugins come only from what the user wrote (the command line, a config): never from a
checkpoint or a run being resumed (docs/security.md). :func:`imported_plugins` says which
modules this process imported, e.g. to accept a ``module:factory`` encoder a checkpoint
names only when the user imported that module.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

_IMPORTED: set[str] = set()


def import_plugins(modules: Iterable[str]) -> None:
    """Import each module once per process (the config check, the spec check and every
    env built in the process ask again: a module already imported here is skipped);
    ``ValueError`` (one line) naming the module if one cannot be imported or raises while
    it is imported."""
    for module in modules:
        if not isinstance(module, str) or not module:
            raise ValueError(f"plugins: a module name is needed, got {module!r}")
        if module in _IMPORTED:
            continue
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ValueError(f"plugin module {module!r} cannot be imported: {exc}") from exc
        except Exception as exc:  # the plugin's own code failed: its error, in one line
            detail = " ".join(str(exc).split()) or "(no message)"
            raise ValueError(
                f"plugin module {module!r} failed while being imported: "
                f"{type(exc).__name__}: {detail}"
            ) from exc
        _IMPORTED.add(module)


def imported_plugins() -> frozenset[str]:
    """The plugin modules :func:`import_plugins` imported in this process."""
    return frozenset(_IMPORTED)
