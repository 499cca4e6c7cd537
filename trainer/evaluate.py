"""Evaluate a Maple policy against named opponents: table, JSON, optional HTML replays.

CLI (DESIGN.md contract 5; Hydra config ``conf/evaluate.yaml``)::

    python -m trainer.evaluate checkpoint=<path> opponents=[random,max_power,heuristic] battles=200

For each opponent the policy plays ``battles`` battles in ``num_envs`` parallel envs
(:func:`mapleenv.make_vector_env`: simulator hosts by default; with ``backend=server``
one Showdown server for the whole evaluation). The
policy runs batched in this process with one recurrent state per env, reset at every
battle start, and **samples** its actions from the masked policy, as in training
(``sample=false``: greedy argmax; measured weaker, see ``docs/evaluation.md``).
Battles are split evenly between the envs and only each env's first ``battles / N``
battles count, so short battles are not over-represented. Battles aborted by a lost
connection are replayed; a battle truncated by ``max_turns`` counts as not won.

Output: a rich table (opponent, battles, wins, win rate, 95% Wilson interval) and a
JSON file with, per opponent, ``battles``, ``wins``, ``win_rate``, ``ci_low``,
``ci_high`` (and ``mean_turns``). ``save_replays=true`` writes each battle's poke-env
HTML replay under ``<output dir>/replays/<opponent>/``.

:class:`PeriodicEvaluator` runs the same evaluation during training every
``eval.every`` updates (:class:`PeriodicEvalConfig`), giving ``eval/<opponent>/win_rate``
metrics. This module imports ``trainer.policy`` lazily (``trainer.config`` may import
:class:`PeriodicEvalConfig` from here).
"""

from __future__ import annotations

import json
import logging
import math
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import MISSING

log = logging.getLogger(__name__)

Z95 = 1.959963984540054  # two-sided 95% normal quantile
DEFAULT_OPPONENTS = ("random", "max_power", "heuristic")


def wilson_interval(wins: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion ``wins / n`` (``(0, 1)`` if n = 0)."""
    if n < 0 or not 0 <= wins <= n:
        raise ValueError(f"need 0 <= wins <= n, got wins={wins}, n={n}")
    if n == 0:
        return 0.0, 1.0
    p = wins / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, center - half), min(1.0, center + half)


@dataclass
class OpponentResult:
    """Outcome of the battles against one opponent."""

    opponent: str
    battles: int
    wins: int
    mean_turns: float = math.nan

    @property
    def win_rate(self) -> float:
        return self.wins / self.battles if self.battles else math.nan

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.wins, self.battles)

    def to_dict(self) -> dict[str, Any]:
        low, high = self.interval
        return {"battles": self.battles, "wins": self.wins, "win_rate": self.win_rate,
                "ci_low": low, "ci_high": high, "mean_turns": self.mean_turns}


# ----------------------------------------------------------------------- battle loop


@torch.no_grad()
def play_battles(
    policy: torch.nn.Module,
    envs: Any,
    battles: int,
    *,
    device: torch.device | str = "cpu",
    sample: bool = True,
    seed: int | None = None,
    on_battle: Callable[[bool], None] | None = None,
) -> tuple[int, int, list[int]]:
    """Play ``battles`` counted battles on a SAME_STEP-autoreset vector env.

    Returns ``(wins, battles, turns per battle)``. ``on_battle(won)`` runs per counted
    battle (progress).
    """
    from trainer.spaces import ObsAdapter

    n = envs.num_envs
    quota = np.array([battles // n + (i < battles % n) for i in range(n)])
    adapter = ObsAdapter(envs.single_observation_space, envs.single_action_space)
    generator = torch.Generator(device=device)
    generator.manual_seed(0 if seed is None else seed)
    obs, _ = envs.reset(seed=seed)
    hidden = policy.initial_state(n, device)
    start = np.ones(n, dtype=np.float32)
    wins, turns = 0, []
    while (quota > 0).any():
        flat, mask = adapter.batch(obs)
        logits, _, hidden = policy(
            torch.from_numpy(flat).to(device), torch.from_numpy(mask).to(device), hidden,
            torch.from_numpy(start).to(device))
        if sample:
            actions = torch.multinomial(torch.softmax(logits.float(), -1), 1,
                                        generator=generator).squeeze(-1)
        else:
            actions = logits.argmax(-1)
        obs, _, terminated, truncated, info = envs.step(actions.cpu().numpy())
        done = terminated | truncated
        start = done.astype(np.float32)
        final = info.get("final_info", {})
        won, has_won = final.get("won"), final.get("_won")
        for i in np.flatnonzero(done):
            if quota[i] <= 0 or won is None or not has_won[i]:
                continue  # beyond this env's quota, or aborted (no result): not counted
            quota[i] -= 1
            wins += bool(won[i])
            if "turns" in final:
                turns.append(int(final["turns"][i]))
            if on_battle is not None:
                on_battle(bool(won[i]))
    return wins, battles, turns


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "opponent"


def evaluate_policy(
    policy: torch.nn.Module,
    opponents: Sequence[str],
    battles: int,
    *,
    battle_format: str = "gen9randombattle",
    encoder: str = "simple",
    num_envs: int = 4,
    sample: bool = True,
    device: torch.device | str = "cpu",
    seed: int = 0,
    max_turns: int | None = None,
    backend: str = "auto",
    server_url: str | None = None,
    log_dir: str | Path | None = None,
    replay_dir: str | Path | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[OpponentResult]:
    """Evaluate ``policy`` against each of ``opponents`` (see module docs).

    ``progress(opponent, done, total)`` is called as battles finish. With the server
    backend and no ``server_url``, one local server serves all opponents.
    """
    from mapleenv import make_vector_env
    from mapleenv.server import ServerPool
    from mapleenv.vector import default_backend

    if battles < 1:
        raise ValueError(f"battles must be >= 1, got {battles}")
    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    if not opponents:
        raise ValueError("no opponents to evaluate against")
    from mapleenv.opponent_mix import uses_self_play

    for name in opponents:
        if uses_self_play(name):
            raise ValueError(f"opponent {name!r}: 'self' plays snapshots pushed during "
                             "training; evaluate against policy:<checkpoint> instead")
    was_training = policy.training
    policy.eval()
    pool = None
    if backend == "auto":
        backend = default_backend(server_url)
    if backend == "server" and server_url is None:
        pool = ServerPool(1, log_dir=log_dir).start()
        server_url = pool.configuration_for(0).websocket_url
    results = []
    try:
        for k, name in enumerate(opponents):
            env_kwargs: dict[str, Any] = {}
            if replay_dir is not None:
                env_kwargs["replay_dir"] = str(Path(replay_dir) / _safe_name(name))
            envs = make_vector_env(
                min(num_envs, battles), battle_format=battle_format, opponent=name,
                server_url=server_url, log_dir=log_dir, encoder=encoder, max_turns=max_turns,
                backend=backend, seed=seed + 1000 * k, autoreset_mode="SameStep", **env_kwargs)
            done = 0

            def on_battle(won: bool, name: str = name) -> None:
                nonlocal done
                done += 1
                if progress is not None:
                    progress(name, done, battles)

            try:
                t0 = time.perf_counter()
                wins, played, turns = play_battles(
                    policy, envs, battles, device=device, sample=sample, seed=seed + k,
                    on_battle=on_battle)
            finally:
                envs.close()
            result = OpponentResult(name, played, wins,
                                    float(np.mean(turns)) if turns else math.nan)
            log.info("vs %s: %d/%d won (%.1f%%) in %.0f s", name, wins, played,
                     100 * result.win_rate, time.perf_counter() - t0)
            results.append(result)
    finally:
        if pool is not None:
            pool.stop()
        policy.train(was_training)
    return results


# -------------------------------------------------------------------------- output


def results_table(results: Sequence[OpponentResult], title: str | None = None) -> Any:
    """A rich ``Table``: opponent, battles, wins, win rate, 95% Wilson interval."""
    from rich.table import Table

    table = Table(title=title)
    for column in ("opponent", "battles", "wins", "win rate", "95% CI (Wilson)"):
        table.add_column(column, justify="left" if column == "opponent" else "right")
    for r in results:
        low, high = r.interval
        table.add_row(r.opponent, str(r.battles), str(r.wins), f"{r.win_rate:.1%}",
                      f"{low:.1%} - {high:.1%}")
    return table


def results_json(results: Sequence[OpponentResult], **meta: Any) -> dict[str, Any]:
    """The JSON document: ``meta`` fields and ``opponents: {name: {battles, wins, ...}}``."""
    return {**meta, "opponents": {r.opponent: r.to_dict() for r in results}}


def write_json(path: str | Path, document: Mapping[str, Any]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, allow_nan=True) + "\n")
    return path


# -------------------------------------------------------------- periodic evaluation


@dataclass
class PeriodicEvalConfig:
    """Evaluation during training (``eval.*``): ``every`` = 0 turns it off."""

    every: int = 0  # updates (iterations) between evaluations
    battles: int = 50  # per opponent
    opponents: list[str] = field(default_factory=lambda: list(DEFAULT_OPPONENTS))
    num_envs: int = 4
    sample: bool = True  # False: greedy (argmax)


class PeriodicEvaluator:
    """Runs :func:`evaluate_policy` every ``cfg.every`` updates during training.

    :meth:`columns` are the metrics columns it fills (known at start, so the CSV header
    is stable); :meth:`maybe_run` returns them for due iterations (else ``{}``) and
    appends each evaluation to ``<run dir>/eval.jsonl``.
    """

    def __init__(self, cfg: PeriodicEvalConfig, env_cfg: Any, run_dir: str | Path,
                 seed: int = 0):
        if cfg.every < 0 or cfg.battles < 1 or cfg.num_envs < 1:
            raise ValueError("eval.every must be >= 0, eval.battles and eval.num_envs >= 1")
        if cfg.every and not hasattr(env_cfg, "battle_format"):
            raise ValueError("eval.every > 0 needs Showdown envs (env=showdown)")
        self.cfg, self.env_cfg, self.run_dir, self.seed = cfg, env_cfg, Path(run_dir), seed

    def columns(self) -> list[str]:
        if not self.cfg.every:
            return []
        return [f"eval/{name}/{key}" for name in self.cfg.opponents
                for key in ("win_rate", "ci_low", "ci_high")]

    def due(self, iteration: int) -> bool:
        return bool(self.cfg.every) and iteration % self.cfg.every == 0

    def maybe_run(self, policy: torch.nn.Module, iteration: int, global_step: int,
                  device: torch.device | str = "cpu") -> dict[str, float]:
        if not self.due(iteration):
            return {}
        env = self.env_cfg
        t0 = time.perf_counter()
        results = evaluate_policy(
            policy, list(self.cfg.opponents), self.cfg.battles,
            battle_format=env.battle_format, encoder=env.encoder, num_envs=self.cfg.num_envs,
            sample=self.cfg.sample, device=device, seed=self.seed + iteration,
            max_turns=env.max_turns, backend=env.backend, server_url=env.server_url,
            log_dir=self.run_dir / "showdown")
        row: dict[str, float] = {}
        for r in results:
            low, high = r.interval
            row |= {f"eval/{r.opponent}/win_rate": r.win_rate,
                    f"eval/{r.opponent}/ci_low": low, f"eval/{r.opponent}/ci_high": high}
        document = results_json(results, iteration=iteration, global_step=global_step,
                                seconds=round(time.perf_counter() - t0, 1))
        with (self.run_dir / "eval.jsonl").open("a") as f:
            f.write(json.dumps(document) + "\n")
        log.info("eval at step %d: %s", global_step, ", ".join(
            f"{r.opponent} {r.win_rate:.0%}" for r in results))
        return row


# ------------------------------------------------------------------------------ CLI


@dataclass
class EvaluateConfig:
    """``python -m trainer.evaluate`` settings (``conf/evaluate.yaml``)."""

    checkpoint: str = MISSING
    opponents: list[str] = field(default_factory=lambda: list(DEFAULT_OPPONENTS))
    battles: int = 200  # per opponent
    num_envs: int = 4
    sample: bool = True  # False: greedy (argmax over legal actions)
    device: str = "cpu"  # cpu | cuda | mps | auto
    seed: int = 0
    save_replays: bool = False
    output: str | None = None  # JSON path; default <hydra run dir>/evaluation.json
    battle_format: str | None = None  # default: the checkpoint's
    max_turns: int | None = None  # default: the checkpoint's env.max_turns
    backend: str = "auto"  # auto (direct, or server with server_url) | server | direct
    server_url: str | None = None  # use this server instead of starting one


def _register_schema() -> None:
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(name="evaluate_schema", node=EvaluateConfig)


def run(cfg: EvaluateConfig, output_dir: str | Path) -> dict[str, Any]:
    """Evaluate ``cfg.checkpoint``; print the table, write the JSON; returns the JSON."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from mapleenv.policy_opponent import snapshot_encoder
    from trainer.checkpoint import load_checkpoint
    from trainer.device import resolve_device
    from trainer.selfplay import policy_from_snapshot

    output_dir = Path(output_dir)
    device = resolve_device(cfg.device)
    checkpoint = load_checkpoint(cfg.checkpoint)
    policy = policy_from_snapshot(checkpoint).to(device)
    env_cfg = (checkpoint.get("config") or {}).get("env") or {}
    battle_format = cfg.battle_format or env_cfg.get("battle_format") or "gen9randombattle"
    encoder = snapshot_encoder(checkpoint)
    max_turns = cfg.max_turns if cfg.max_turns is not None else env_cfg.get("max_turns")
    output = Path(cfg.output) if cfg.output else output_dir / "evaluation.json"
    replay_dir = output.parent / "replays" if cfg.save_replays else None
    console = Console(stderr=True)
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  console=console, disable=not console.is_terminal) as bar:
        tasks = {name: bar.add_task(f"vs {name}", total=cfg.battles) for name in cfg.opponents}

        def progress(name: str, done: int, total: int) -> None:
            bar.update(tasks[name], completed=done)
            if not console.is_terminal and (done == total or done % max(total // 10, 1) == 0):
                log.info("vs %s: %d/%d battles", name, done, total)

        results = evaluate_policy(
            policy, list(cfg.opponents), cfg.battles, battle_format=battle_format,
            encoder=encoder, num_envs=cfg.num_envs, sample=cfg.sample, device=device,
            seed=cfg.seed, max_turns=max_turns, backend=cfg.backend,
            server_url=cfg.server_url, log_dir=output_dir / "showdown",
            replay_dir=replay_dir, progress=progress)
    document = results_json(
        results, checkpoint=str(cfg.checkpoint), global_step=checkpoint.get("global_step"),
        battle_format=battle_format, encoder=encoder,
        policy="sampled" if cfg.sample else "greedy", seed=cfg.seed, max_turns=max_turns)
    write_json(output, document)
    Console().print(results_table(results, title=f"{cfg.checkpoint} ({document['policy']})"))
    print(f"results: {output}" + (f"; replays: {replay_dir}" if replay_dir else ""))
    return document


def main() -> None:
    """Console entry point: Hydra app over ``conf/evaluate.yaml``."""
    import hydra
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import DictConfig, OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    _register_schema()
    conf_dir = str(Path(__file__).resolve().parent.parent / "conf")

    @hydra.main(version_base="1.3", config_path=conf_dir, config_name="evaluate")
    def _app(raw: DictConfig) -> None:
        try:
            cfg = OmegaConf.to_object(raw)
            assert isinstance(cfg, EvaluateConfig)
            run(cfg, HydraConfig.get().runtime.output_dir)
        except (FileNotFoundError, ValueError, OmegaConfBaseException) as exc:
            log.error("%s", exc)
            sys.exit(2)

    _app()


if __name__ == "__main__":
    main()
