"""Plugins are imported once per process: the config check, the spec check and every env
the process builds ask for them, and only the first import runs the module."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mapleenv.plugins import import_plugins, imported_plugins


def test_a_plugin_module_runs_once_per_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "counting_plugin.py").write_text(
        "import builtins\n"
        "builtins.counting_plugin_runs = getattr(builtins, 'counting_plugin_runs', 0) + 1\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import builtins

    try:
        import_plugins(["counting_plugin"])
        del sys.modules["counting_plugin"]  # a second import would run it again
        import_plugins(["counting_plugin", "counting_plugin"])
        assert builtins.counting_plugin_runs == 1
        assert "counting_plugin" in imported_plugins()
    finally:
        sys.modules.pop("counting_plugin", None)
        del builtins.counting_plugin_runs


def test_a_bad_name_is_still_refused_each_time():
    for _ in range(2):
        with pytest.raises(ValueError, match="plugin module 'no_such_maple_plugin' cannot be"):
            import_plugins(["no_such_maple_plugin"])
