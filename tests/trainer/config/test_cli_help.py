"""``--help`` of the three CLIs (conf/hydra/help/, conf/play.yaml): usage, every group option
without Hydra's ``*_schema`` entries, described keys that exist in the config, docs links."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from warm_cli import run_python

from trainer.config import EvaluateConfig, PlayConfig

ROOT = Path(__file__).resolve().parents[3]
CONF = ROOT / "conf"
KEY_LINE = re.compile(r"^ {2,4}([a-z_]+(?:\.[a-z_*]+)*) {2,}\S", re.MULTILINE)


def help_text(module: str, *overrides: str) -> str:
    proc = run_python(
        [sys.executable, "-m", module, *overrides, "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.integration
def test_trainer_help_lists_groups_keys_and_docs() -> None:
    text = help_text("trainer")
    assert text.startswith("python -m trainer:") and "Usage: python -m trainer" in text
    assert "_schema" not in text and "powered by Hydra" not in text
    for group in ("env", "model", "algo", "experiment", "hydra/launcher"):
        line = next(x for x in text.splitlines() if x.strip().lstrip("+").startswith(f"{group}="))
        for option in sorted((CONF / group).glob("*.yaml")):
            assert re.search(rf"\b{option.stem}\b", line), (group, option.stem, line)
    keys = KEY_LINE.findall(text)
    assert len(keys) >= 20
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config")
    for key in keys:  # every described key exists (a renamed key fails here)
        node = key.removesuffix(".*")
        assert OmegaConf.select(cfg, node, default=KeyError) is not KeyError, key
    assert "docs/training.md" in text and "docs/extending.md" in text
    # values in brackets are the composed config's: they follow overrides
    assert "total_steps           env steps to train [1000000]" in text
    smoke = help_text("trainer", "+experiment=smoke")
    assert "total_steps           env steps to train [96]" in smoke


@pytest.mark.parametrize(
    ("module", "schema"), [("trainer.evaluate", EvaluateConfig), ("trainer.play", PlayConfig)]
)
@pytest.mark.integration
def test_evaluate_and_play_help_describe_every_key(module: str, schema: type) -> None:
    text = help_text(module)
    assert text.startswith(f"python -m {module}:") and "_schema" not in text
    described = set()
    for line in text.splitlines():
        match = re.match(r"^ {2,4}([a-z_]+(?:, [a-z_]+)*) {2,}\S", line)
        if match:
            described |= set(match.group(1).split(", "))
    assert described == {f.name for f in dataclasses.fields(schema)}
    assert "docs/" in text


@pytest.mark.integration
@pytest.mark.parametrize("module", ["trainer", "trainer.evaluate", "trainer.play"])
def test_help_into_a_closed_pipe_ends_quietly(module: str) -> None:
    # `python -m trainer --help | head -1`: the reader is gone before the help is printed
    # (its end closed before the CLI starts), so every write meets a closed pipe
    import os
    import signal

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(  # a real pipe on stdout: not run_python
            [sys.executable, "-m", module, "--help"],
            cwd=ROOT,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    assert proc.returncode == -signal.SIGPIPE
