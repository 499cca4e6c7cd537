"""mapleenv.engine.require: a missing engine is one line naming the install step, as is a
build without gen 9 or without Maple's seed."""

from __future__ import annotations

import sys
import types

import pytest

from mapleenv.engine import INSTALL_STEP, EngineNotInstalledError, require_engine


def test_a_missing_engine_is_one_line_naming_the_install_step(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "poke_engine", None)  # import poke_engine raises
    with pytest.raises(EngineNotInstalledError) as caught:
        require_engine()
    message = str(caught.value)
    assert message.startswith("poke-engine is not installed")
    assert "make setup" in message and "python -m mapleenv.engine.install" in message
    assert "\n" not in message
    assert isinstance(caught.value, ImportError)  # callers may catch ImportError


def test_a_build_without_gen9_is_one_line_asking_for_a_rebuild(monkeypatch) -> None:
    # a module without the engine's API stands for another build: its probe fails
    monkeypatch.setitem(sys.modules, "poke_engine", types.ModuleType("poke_engine"))
    with pytest.raises(
        EngineNotInstalledError,
        match=r"without gen 9 .*`python -m mapleenv.engine.install --force`$",
    ):
        require_engine()
    assert require_engine(gen9=False) is sys.modules["poke_engine"]
    assert INSTALL_STEP in str(EngineNotInstalledError(INSTALL_STEP))


def _released_build() -> types.ModuleType:
    """A module with the released API of a gen 9 build: ``mcts`` takes no seed."""
    module = types.ModuleType("poke_engine")
    for name in ("Pokemon", "Move", "Side", "State"):
        setattr(module, name, lambda **fields: types.SimpleNamespace(**fields))

    def mcts(state, duration_ms, iterations, threads):
        return types.SimpleNamespace(s1=[types.SimpleNamespace(move_choice="tackle-tera")])

    module.mcts = mcts
    return module


def test_a_build_without_the_seed_is_one_line_asking_for_a_rebuild(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "poke_engine", _released_build())
    with pytest.raises(
        EngineNotInstalledError,
        match=r"without Maple's seed .*`python -m mapleenv.engine.install --force`$",
    ):
        require_engine()
