"""Bad input to ``python -m trainer`` (issue #21): one line naming the problem, exit code
2, and nothing written (no run dir, no ``.hydra/``, no log): too many envs for the
machine, an unknown opponent / encoder / reward function, a plugin that raises, a team
that is a FIFO or a device, a ``resume=`` that is not a checkpoint (docs/security.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from warm_cli import run_python

from trainer.config import ConfigError, to_train_config

ROOT = Path(__file__).resolve().parents[3]
CONF = ROOT / "conf"


def cli(cwd: Path, module: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    """``python -m <module> ...`` started in ``cwd``, with ``cwd`` on the path for plugins."""
    path = os.pathsep.join([str(ROOT), str(cwd), os.environ.get("PYTHONPATH", "")])
    return run_python(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        timeout=180,
        env={**os.environ, "PYTHONPATH": path, **env},
    )


def trainer(cwd: Path, *overrides: str) -> subprocess.CompletedProcess:
    """``python -m trainer +experiment=smoke ...`` started in ``cwd`` (its default run dir
    is under ``cwd/outputs``)."""
    return cli(cwd, "trainer", "+experiment=smoke", *overrides)


def assert_one_line_and_nothing_written(
    proc: subprocess.CompletedProcess, cwd: Path, message: str, before: set[Path]
) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-3000:]
    assert "Traceback" not in out
    lines = out.strip().splitlines()
    assert len(lines) == 1 and "[ERROR]" in lines[0] and message in lines[0], lines
    assert set(cwd.rglob("*")) == before  # no outputs/, no .hydra, no log


def _bad_cases(tmp_path: Path) -> list[tuple[list[str], str]]:
    (tmp_path / "raising_plugin.py").write_text("raise RuntimeError('plugin says no')\n")
    fifo = tmp_path / "team.fifo"
    os.mkfifo(fifo)
    return [
        (["env.num_envs=1000000"], "set env.allow_oversubscribe=true to start them anyway"),
        (["env.opponent=nobody"], "env.opponent: unknown opponent 'nobody'"),
        (["+env.opponent={random: 1, nobody: 1}"], "env.opponent: unknown opponent 'nobody'"),
        (["env.encoder=nope"], "env.encoder: unknown encoder 'nope'"),
        (["env.reward_fn=nope"], "env.reward_fn: unknown reward_fn 'nope'"),
        (
            ["env.plugins=[raising_plugin]"],
            "env.plugins: plugin module 'raising_plugin' failed while being imported: "
            "RuntimeError: plugin says no",
        ),
        (
            ["env.battle_format=gen9ou", f"env.team={fifo}"],
            f"env.team: {fifo} is a FIFO (named pipe), not a team file",
        ),
        (
            ["env.battle_format=gen9ou", "env.team=/dev/zero"],
            "env.team: /dev/zero is a character device, not a team file",
        ),
        (["env.server_url=ws://127.0.0.1:99999/x"], "env.server_url: bad server URL"),
    ]


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_bad_inputs_are_one_line_exit_2_and_write_nothing(tmp_path: Path) -> None:
    cases = _bad_cases(tmp_path)
    before = set(tmp_path.rglob("*"))
    for overrides, message in cases:
        proc = trainer(tmp_path, *overrides)
        assert_one_line_and_nothing_written(proc, tmp_path, message, before)


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_resume_of_a_file_that_is_not_a_checkpoint_writes_nothing(tmp_path: Path) -> None:
    run = tmp_path / "somewhere"
    run.mkdir()
    fake = run / "last.pt"
    fake.write_bytes(b"not a checkpoint\n" * 10)
    before = set(tmp_path.rglob("*"))
    proc = trainer(tmp_path, f"resume={fake}")
    assert_one_line_and_nothing_written(proc, tmp_path, f"cannot read checkpoint {fake}", before)
    proc = trainer(tmp_path, f"resume={tmp_path / 'nothing_here'}")
    assert_one_line_and_nothing_written(proc, tmp_path, "checkpoint not found", before)


@pytest.mark.integration  # node lists the simulator's formats
def test_allow_oversubscribe_is_the_documented_way_past_the_count_check() -> None:
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        too_many = compose("config", overrides=["+experiment=smoke", "env.num_envs=100000"])
        allowed = compose(
            "config",
            overrides=[
                "+experiment=smoke",
                "env.num_envs=100000",
                "env.allow_oversubscribe=true",
            ],
        )
    with pytest.raises(ConfigError, match="set env.allow_oversubscribe=true"):
        to_train_config(too_many)
    assert to_train_config(allowed).env.num_envs == 100000


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_overrides_hydra_cannot_compose_are_one_line_exit_2_for_every_cli(tmp_path: Path) -> None:
    """A wrong type, an unknown key or config group, a syntax error: Hydra's own composition
    errors, caught before any of Maple's checks, are one line too (also under ``-m``)."""
    before = set(tmp_path.rglob("*"))
    cases = [
        ("trainer", ["seed=abc"], "Error merging override seed=abc: Value 'abc' of type 'str'"),
        ("trainer", ["env.nope=1"], "Could not override 'env.nope'"),
        ("trainer", ["+experiment=nope"], "Could not find 'experiment/nope'"),
        ("trainer", ["-m", "seed=1,2", "env.num_envs=x"], "Error merging override env.num_envs=x"),
        ("trainer", ["env.opponent=[random"], "override_grammar"),
        ("trainer.evaluate", ["checkpoint=x.pt", "battles=abc"], "override battles=abc"),
        ("trainer.play", ["checkpoint=x.pt", "battles=abc"], "override battles=abc"),
    ]
    for module, overrides, message in cases:
        proc = cli(tmp_path, module, *overrides)
        assert_one_line_and_nothing_written(proc, tmp_path, message, before)
        assert "Config search path" not in proc.stderr
    proc = cli(tmp_path, "trainer", "seed=abc", HYDRA_FULL_ERROR="1")
    assert proc.returncode == 1 and "Traceback" in proc.stderr  # Hydra's full report on request


def _settings_cases(tmp_path: Path) -> list[tuple[str, list[str], str]]:
    """(module, overrides, the line's fragment): seeds out of range, a results path that
    cannot be written, a team folder with a symlink loop and a dangling link (issue 34),
    evaluation counts and opponents no evaluation can use."""
    from builders import write_tiny_checkpoint

    good = write_tiny_checkpoint(tmp_path / "files" / "tiny.pt")
    loop = tmp_path / "files" / "loop"
    loop.mkdir()
    (loop / "a").symlink_to(loop / "b")
    (loop / "b").symlink_to(loop / "a")
    dangling = tmp_path / "files" / "dangling"
    dangling.mkdir()
    (dangling / "team.txt").symlink_to(tmp_path / "nowhere")
    evaluate = ["trainer.evaluate", f"checkpoint={good}", "battles=2", "num_envs=1"]
    play = ["trainer.play", f"checkpoint={good}"]
    seed_range = "seed must be in 0..4294967295"
    return [
        ("trainer", ["+experiment=smoke", f"seed={10**30}"], seed_range),
        (evaluate[0], [*evaluate[1:], "seed=-5"], seed_range),
        (play[0], [*play[1:], "seed=4294967296"], seed_range),
        (evaluate[0], [*evaluate[1:], "output=/proc/self/mem"], "output: cannot write in"),
        (play[0], [*play[1:], f"output={tmp_path / 'files'}"], "is a directory, not a file"),
        (
            "trainer",
            ["+experiment=smoke", "env.battle_format=gen9ou", f"env.team={loop}"],
            "in team folder cannot be read: Too many levels of symbolic links",
        ),
        (evaluate[0], [*evaluate[1:], f"team={loop}"], "Too many levels of symbolic links"),
        (evaluate[0], [*evaluate[1:], "battles=0"], "battles must be >= 1, got 0"),
        (evaluate[0], [*evaluate[1:], "max_turns=0"], "max_turns must be >= 1 or None, got 0"),
        (evaluate[0], [*evaluate[1:], "server_url=nope"], "bad server address 'nope'"),
        (evaluate[0], [*evaluate[1:], "opponents=[nobody]"], "unknown opponent 'nobody'"),
        (evaluate[0], [*evaluate[1:], "opponents=[self]"], "'self' plays snapshots pushed"),
        (
            play[0],
            [*play[1:], "battle_format=gen9ou", f"team={dangling}"],
            "in team folder cannot be read: No such file or directory",
        ),
    ]


@pytest.mark.integration
@pytest.mark.timeout(600)
def test_bad_seeds_outputs_and_team_folders_are_one_line_for_every_cli(tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    cases = _settings_cases(tmp_path)
    before = set(cwd.rglob("*"))
    for module, overrides, message in cases:
        proc = cli(cwd, module, *overrides)
        assert_one_line_and_nothing_written(proc, cwd, message, before)


def test_an_error_no_preflight_check_expected_is_one_short_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Hydra only warns about a callback that raises, then runs the job: the preflight
    turns any exception into the one line (issue 34), cut short whatever its size."""
    import mapleenv.policies
    from trainer.preflight import EvaluatePreflight

    def unexpected(path: str) -> None:
        raise RecursionError("maximum recursion depth exceeded\n" + "x" * 10**7)

    monkeypatch.setattr(mapleenv.policies, "read_snapshot", unexpected)
    checkpoint = tmp_path / "x.pt"
    checkpoint.write_bytes(b"")  # a file: the loader gets to read it
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        config = compose("evaluate", overrides=[f"checkpoint={checkpoint}"])
    with pytest.raises(SystemExit) as info:
        EvaluatePreflight().on_run_start(config)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 4096, err[:300]
    assert "[trainer.apps.evaluate][ERROR] - RecursionError: maximum recursion depth" in err
