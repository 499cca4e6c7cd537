"""``scripts/bench/bench_env.py`` and the simulator ceiling (``mapleenv.measure.Ceiling``): they run
and report sanely.

(Speeds are not asserted here: the benchmark prints them.)
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psutil
import pytest

from mapleenv.measure import Ceiling

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "bench" / "bench_env.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_env", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_random_masked_actions_are_legal_and_cover_every_legal_action(bench) -> None:
    rng = np.random.default_rng(0)
    masks = (rng.random((64, 26)) < 0.2).astype(np.int8)
    masks[:, 3] = 1
    seen = np.zeros_like(masks, dtype=bool)
    for _ in range(200):
        actions = bench.random_masked_actions(masks, rng)
        assert masks[np.arange(64), actions].all()
        seen[np.arange(64), actions] = True
    assert (seen == masks.astype(bool)).all()


def _cpu_s(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


@pytest.mark.integration
def test_ceiling_counts_turns_and_is_idle_between_measurements() -> None:
    ceiling = Ceiling(procs=2, warmup=0)
    try:
        first = ceiling.measure(1.5)
        assert first["sim_procs"] == 2 and len(first["sim_turns_per_s_each"]) == 2
        assert all(rate > 0 for rate in first["sim_turns_per_s_each"])
        assert first["sim_turns_per_s"] == pytest.approx(
            sum(first["sim_turns_per_s_each"]), abs=0.2
        )
        assert first["sim_cpu_ms_per_turn"] > 0
        pids = [proc.pid for proc in ceiling.procs]
        before = sum(_cpu_s(pid) for pid in pids)
        time.sleep(1.5)
        assert sum(_cpu_s(pid) for pid in pids) - before < 0.2  # abandoned battles stall
        assert ceiling.measure(1.0)["sim_turns_per_s"] > 0
    finally:
        ceiling.close()
    assert [proc.returncode for proc in ceiling.procs] == [0, 0]


@pytest.mark.integration
def test_sim_ceiling_script_rejects_bad_arguments() -> None:
    out = subprocess.run(
        ["node", str(REPO / "mapleenv" / "js" / "sim_ceiling.js"), "--secs", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "bad argument --secs" in out.stderr


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(400)
def test_bench_env_alternates_maple_and_the_design_cards_shape() -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--shape",
            "maple,card",
            "--num-envs",
            "2",
            "--backend",
            "direct",
            "--seconds",
            "2",
            "--rounds",
            "2",
            "--warmup",
            "1",
            "--ceiling-warmup",
            "1",
            "--sim-procs",
            "1",
            "--sim-hosts",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    maple, card = lines
    assert (maple["shape"], card["shape"]) == ("maple", "card")
    assert maple["sim_hosts"] == 1 and card["sim_hosts"] == 2  # the card: one host per env
    for record in (maple, card):  # each line's own numbers agree with its rounds
        assert record["num_envs"] == 2 and len(record["env_steps_per_s_rounds"]) == 2
        assert record["env_steps_per_s"] > 0 and record["env_cpu_ms_per_step"] > 0
        assert record["ratio"] > 0 and record["cpu_ratio"] > 0
        assert record["backend"] == "direct" and record["machine"]["cores"] >= 1
        assert len(record["sim_turns_per_s_rounds"]) == 2 and record["sim_turns_per_s"] > 0
        assert record["cpu_ratio"] == pytest.approx(
            record["sim_cpu_ms_per_turn"] / record["env_cpu_ms_per_step"]
        )
        per_round = [
            e / s
            for e, s in zip(
                record["env_steps_per_s_rounds"], record["sim_turns_per_s_rounds"], strict=True
            )
        ]
        assert min(per_round) - 0.01 <= record["ratio"] <= max(per_round) + 0.01
    assert maple["sim_turns_per_s_rounds"] == card["sim_turns_per_s_rounds"]  # one ceiling
    assert "card_vs_maple" not in maple
    ratios = [
        c / m
        for c, m in zip(
            card["env_steps_per_s_rounds"], maple["env_steps_per_s_rounds"], strict=True
        )
    ]
    assert min(ratios) - 0.01 <= card["card_vs_maple"] <= max(ratios) + 0.01


@pytest.mark.integration
def test_bench_env_rejects_an_unknown_shape() -> None:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--shape", "maple,cards"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert out.returncode == 2
    assert (
        out.stderr.strip()
        .splitlines()[-1]
        .endswith("--shape takes maple, card (comma-separated), got 'maple,cards'")
    )


@pytest.mark.integration
def test_process_cpu_leaves_out_the_excluded_descendants() -> None:
    from mapleenv.measure import process_cpu

    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        deadline = time.monotonic() + 60
        while _cpu_s(busy.pid) < 0.3:
            assert time.monotonic() < deadline, "the busy child got no CPU"
        # Left-out first: CPU times only grow, so the difference is at least the busy
        # child's CPU at this point (less psutil's 10 ms tick and float rounding).
        busy_cpu = _cpu_s(busy.pid)
        left_out = process_cpu(exclude={busy.pid})
        counted = process_cpu()
        assert counted["workers"] - left_out["workers"] >= busy_cpu - 0.02
        assert left_out["main"] > 0
    finally:
        busy.kill()
        busy.wait()


def test_doubles_vs_singles_is_the_median_of_the_per_round_ratios(bench) -> None:
    def record(fmt: str, rates: list[float], cpu: float, sim: float, sim_cpu: float) -> dict:
        return {
            "backend": "direct", "num_envs": 8, "shape": "maple", "battle_format": fmt,
            "env_steps_per_s_rounds": rates, "env_cpu_ms_per_step": cpu,
            "sim_turns_per_s": sim, "sim_cpu_ms_per_turn": sim_cpu,
        }  # fmt: skip

    singles = record("gen9randombattle", [100.0, 200.0, 100.0], 10.0, 400.0, 5.0)
    doubles = record("gen9randomdoublesbattle", [50.0, 180.0, 70.0], 25.0, 200.0, 10.0)
    (line,) = bench.doubles_vs_singles([singles, doubles])
    assert line["compare"] == "doubles_vs_singles" and line["doubles"] == doubles["battle_format"]
    assert line["env_steps_per_s_ratio"] == 0.7 and line["meets_target"] is True
    assert line["env_cpu_ms_per_step_ratio"] == 2.5
    assert line["sim_turns_per_s_ratio"] == 0.5 and line["sim_cpu_ms_per_turn_ratio"] == 2.0
    assert bench.doubles_vs_singles([singles]) == []  # one kind only: no comparison
