"""``python -m trainer.evaluate``: evaluate a checkpoint against named opponents (CLI).

    python -m trainer.evaluate checkpoint=<path> opponents=[random,max_power,heuristic] battles=200

Prints a table and writes a JSON file (``docs/evaluation.md``); the
work is done by :mod:`trainer.evaluation`. Config: ``conf/evaluate.yaml`` over
:class:`trainer.config.EvaluateConfig`. The checkpoint is read with the safe loader; only
the plugins given here (``plugins=``) are imported, never those the checkpoint names
(docs/security.md).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from trainer.apps.hydra_app import run_app
from trainer.config import EvaluateConfig

log = logging.getLogger(__name__)

__all__ = ["main", "run"]


def run(cfg: EvaluateConfig, output_dir: str | Path) -> dict[str, Any]:
    """Evaluate ``cfg.checkpoint``; print the table, write the JSON; returns the JSON."""
    # imported here, once the settings passed their checks: a refused command never pays
    # for torch (docs/architecture.md)
    from rich.console import Console

    from mapleenv import EnvSpec
    from mapleenv.plugins import import_plugins
    from mapleenv.policies import policy_from_snapshot
    from mapleenv.search import require_engine_for
    from trainer.apps.eval_progress import EvaluationProgress
    from trainer.evaluation import evaluate_policy, quality_table, results_table, write_json
    from trainer.run.device import resolve_device

    output_dir = Path(output_dir)
    device = resolve_device(cfg.device)
    require_engine_for(cfg.search)  # EngineMissing: one line naming the install step
    import_plugins(cfg.plugins)  # the user's own, before the checkpoint's encoder is checked
    checkpoint = _checkpoint(cfg)
    policy = policy_from_snapshot(checkpoint).to(device)
    output = Path(cfg.output) if cfg.output else output_dir / "evaluation.json"
    replay_dir = output.parent / "replays" if cfg.save_replays else None
    settings = _env_settings(cfg, checkpoint)
    spec = EnvSpec(
        **settings,
        server=cfg.server_url,
        log_dir=str(output_dir / "showdown"),
        replay_dir=None if replay_dir is None else str(replay_dir),
        seed=cfg.seed,
    ).checked()  # the one check: plugins, format, teams (every opponent's envs share it)
    with EvaluationProgress(list(cfg.opponents), cfg.battles) as progress:
        results = evaluate_policy(
            policy,
            spec,
            list(cfg.opponents),
            cfg.battles,
            num_envs=cfg.num_envs,
            sample=cfg.sample,
            device=device,
            progress=progress,
            search=cfg.search if cfg.search.enabled else None,
        )
    document = _document(cfg, checkpoint, settings, results)
    write_json(output, document)
    Console().print(results_table(results, title=f"{cfg.checkpoint} ({document['policy']})"))
    quality = quality_table(results)
    if quality is not None:
        Console().print(quality)
    print(f"results: {output}" + (f"; replays: {replay_dir}" if replay_dir else ""))
    return document


def _checkpoint(cfg: EvaluateConfig) -> dict[str, Any]:
    """The checkpoint, read with the safe loader (``CheckpointError``: one line); its
    encoder must be registered here."""
    from mapleenv.policies import checked_snapshot, load_checkpoint

    checkpoint = load_checkpoint(cfg.checkpoint)
    _warn_untrusted_plugins(cfg, checkpoint)
    checked_snapshot(checkpoint, str(cfg.checkpoint))
    return checkpoint


def _env_settings(cfg: EvaluateConfig, checkpoint: dict[str, Any]) -> dict[str, Any]:
    """The evaluation's ``EnvSpec`` settings: as given here, else as the checkpoint's run
    had them. Teams given here are relative to where the command started; the
    checkpoint's (as its run was configured, e.g. teams/gen9ou) to the current directory."""
    from mapleenv.policies import snapshot_encoder
    from trainer.config import checkpoint_battle_format, checkpoint_mask_futile, team_path

    env_cfg = (checkpoint.get("config") or {}).get("env") or {}
    return {
        "battle_format": checkpoint_battle_format(cfg.battle_format, checkpoint),
        "team": team_path(cfg.team or env_cfg.get("team")),
        "opponent_team": team_path(cfg.opponent_team or env_cfg.get("opponent_team")),
        "encoder": snapshot_encoder(checkpoint),
        "max_turns": cfg.max_turns if cfg.max_turns is not None else env_cfg.get("max_turns"),
        "mask_futile": checkpoint_mask_futile(cfg.mask_futile, checkpoint),
        "backend": cfg.backend,
        "plugins": list(cfg.plugins),
        "battle_minutes": cfg.battle_minutes,
    }


def _document(
    cfg: EvaluateConfig, checkpoint: dict[str, Any], settings: dict[str, Any], results: Any
) -> dict[str, Any]:
    """The evaluation JSON (docs/evaluation.md): the results and how they were played."""
    from trainer.evaluation import results_json

    teams = {k: settings[k] for k in ("team", "opponent_team") if settings[k]}
    return results_json(
        results,
        checkpoint=str(cfg.checkpoint),
        global_step=checkpoint.get("global_step"),
        battle_format=settings["battle_format"],
        **teams,
        encoder=settings["encoder"],
        policy="sampled" if cfg.sample else "greedy",
        seed=cfg.seed,
        max_turns=settings["max_turns"],
        mask_futile=settings["mask_futile"],
        **({"search": _search_settings(cfg)} if cfg.search.enabled else {}),
    )


def _search_settings(cfg: EvaluateConfig) -> dict[str, Any]:
    """The search settings as recorded in the JSON."""
    import dataclasses

    return {k: v for k, v in dataclasses.asdict(cfg.search).items() if k != "enabled"}


def _warn_untrusted_plugins(cfg: EvaluateConfig, checkpoint: dict[str, Any]) -> None:
    """One line when the checkpoint's run used plugins not given here: they are not
    imported (a file does not pick the code that runs)."""
    from mapleenv.policies import snapshot_plugins

    missing = [m for m in snapshot_plugins(checkpoint) if m not in cfg.plugins]
    if missing:
        log.warning(
            "%s was trained with plugins %s, which are not imported: if you trust them, pass "
            "plugins=[%s]",
            cfg.checkpoint,
            missing,
            ",".join([*cfg.plugins, *missing]),
        )


def main() -> None:
    """Console entry point: Hydra app over ``conf/evaluate.yaml``."""
    from omegaconf.errors import OmegaConfBaseException

    run_app(
        "evaluate",
        __name__,
        _evaluate,
        bad_input=(FileNotFoundError, ValueError, OmegaConfBaseException),
    )


def _evaluate(raw: Any) -> None:
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    cfg = OmegaConf.to_object(raw)
    assert isinstance(cfg, EvaluateConfig)
    run(cfg, HydraConfig.get().runtime.output_dir)


if __name__ == "__main__":
    main()
