"""pyproject.toml lists the wheel's packages by hand (the configs ship as ``maple_conf``, mapped
from conf/, which ``packages.find`` cannot do): the list must hold every package of the tree,
and every console script must name a function that exists."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

from setuptools import find_namespace_packages

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_package_of_the_tree_is_listed() -> None:
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    tree = set(find_namespace_packages(str(ROOT), include=["mapleenv*", "trainer*"]))
    conf = {"maple_conf"} | {
        "maple_conf." + ".".join(p.relative_to(ROOT / "conf").parts)
        for p in (ROOT / "conf").rglob("*")
        if p.is_dir() and p.name != "__pycache__"
    }
    assert listed == tree | conf, "add the new package to [tool.setuptools] packages"
    assert PYPROJECT["tool"]["setuptools"]["package-dir"] == {"maple_conf": "conf"}


def test_every_console_script_names_a_function() -> None:
    scripts = PYPROJECT["project"]["scripts"]
    assert {
        "maple-train",
        "maple-evaluate",
        "maple-play",
        "maple-export-checkpoint",
        "maple-convert-checkpoint",
        "maple-setup-sim",
    } <= set(scripts)
    for name, target in scripts.items():
        module, _, function = target.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), name
