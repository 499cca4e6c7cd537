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


def _released_build(seeded: bool = False) -> types.ModuleType:
    """A module with the released API of a gen 9 build (``mcts`` takes no seed), or with
    ``seeded`` the first Maple build's (a seed, no prior)."""
    module = types.ModuleType("poke_engine")
    for name in ("Pokemon", "Move", "Side", "State"):
        setattr(module, name, lambda **fields: types.SimpleNamespace(**fields))

    def released(state, duration_ms, iterations, threads):
        return types.SimpleNamespace(
            s1=[types.SimpleNamespace(move_choice="tackle-tera", visits=1)]
        )

    def seeded_only(state, duration_ms, iterations, threads, seed=None):
        return released(state, duration_ms, iterations, threads)

    module.mcts = seeded_only if seeded else released
    return module


@pytest.mark.parametrize("seeded", [False, True], ids=["released", "seed-without-prior"])
def test_a_build_without_the_edits_is_one_line_asking_for_a_rebuild(
    monkeypatch, seeded: bool
) -> None:
    monkeypatch.setitem(sys.modules, "poke_engine", _released_build(seeded))
    with pytest.raises(
        EngineNotInstalledError,
        match=r"without Maple's edits .*`python -m mapleenv.engine.install --force`$",
    ):
        require_engine()
