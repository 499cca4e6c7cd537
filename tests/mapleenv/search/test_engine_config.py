"""search.engine's settings: checked names and budgets, options in a ``policy_search:``
name, and a missing engine as one line naming the install step (the evaluation CLI with
poke-engine made unimportable)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mapleenv.search import SearchConfig, split_search_options

ROOT = Path(__file__).resolve().parents[3]


def test_the_engine_and_its_budget_are_checked() -> None:
    with pytest.raises(ValueError, match="search.engine is not one of showdown, poke-engine"):
        SearchConfig(engine="stockfish")
    with pytest.raises(ValueError, match="search.engine_iterations is out of range"):
        SearchConfig(engine="poke-engine", engine_iterations=0)
    with pytest.raises(ValueError, match="search needs a budget"):
        SearchConfig(time_ms=None, engine_iterations=5000)  # the Showdown search has none
    assert SearchConfig(engine="poke-engine", time_ms=None, engine_iterations=5000)


def test_search_options_in_an_opponents_name() -> None:
    path, options = split_search_options(
        "models/x.pt?engine=poke-engine&time_ms=100&engine_iterations=none&worlds=3"
    )
    assert path == "models/x.pt"
    assert options == {"engine": "poke-engine", "time_ms": 100.0, "engine_iterations": None,
                       "worlds": 3}  # fmt: skip
    assert split_search_options("models/x.pt") == ("models/x.pt", {})
    with pytest.raises(ValueError, match="unknown search option 'depth'"):
        split_search_options("x.pt?depth=3")
    with pytest.raises(ValueError, match="worlds='many' is not a int"):
        split_search_options("x.pt?worlds=many")
    with pytest.raises(ValueError, match="search.engine is not one of"):
        SearchConfig(**split_search_options("x.pt?engine=nope")[1])


@pytest.mark.integration  # runs the CLI
def test_a_missing_engine_is_one_line_naming_the_install_step(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['poke_engine'] = None; "  # import poke_engine fails
        "from trainer.evaluate import main; main()"
    )
    args = [
        "checkpoint=models/attention_ppo_gen9random.pt",
        "opponents=[random]",
        "search.enabled=true",
        "search.engine=poke-engine",
        f"hydra.run.dir={tmp_path}",
    ]
    done = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if "[ERROR]" in line]
    assert len(errors) == 1, done.stderr
    assert "search.engine=poke-engine: poke-engine is not installed" in errors[0]
    assert "make setup" in errors[0]
