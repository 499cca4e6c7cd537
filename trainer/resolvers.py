"""The OmegaConf resolvers of Maple's configs: Hydra's output paths (``conf/config.yaml``)
and ``env.encoder``'s default (``conf/env/showdown.yaml``).

Registered when the ``trainer`` package is imported: every process that composes or
unpickles a trainer config (the CLI, a Ray launcher's job) has them before Hydra resolves
``hydra.run.dir`` or ``hydra.output_subdir``.
"""

from __future__ import annotations

from omegaconf import OmegaConf


def run_dir(resume: str | None, new_run_dir: str) -> str:
    """Hydra's run dir: with ``resume=<run dir or checkpoint>`` the resumed run's own dir, so
    the segment's log and Hydra files go there and no second run dir is made; else
    ``new_run_dir``. A resume path that does not resolve keeps ``new_run_dir``: the run then
    stops there with one line saying why."""
    if not resume:
        return new_run_dir
    from trainer.run.checkpoint import resolve_checkpoint, run_dir_of  # torch: only when resuming

    try:
        return str(run_dir_of(resolve_checkpoint(resume)))
    except FileNotFoundError:
        return new_run_dir


def hydra_subdir(resume: str | None, stamp: str) -> str:
    """Where Hydra writes a run's config and overrides: ``.hydra``, or for a resumed
    segment ``.hydra/resumed_<stamp>``, keeping the first segment's files."""
    return f".hydra/resumed_{stamp}" if resume else ".hydra"


def encoder(battle_format: str, model_kind: str) -> str:
    """``env.encoder`` when the config names none: the one ``model.kind`` reads on the
    format's game (``model=attention``: ``singles_sets`` on singles, ``doubles_entities`` on
    doubles), else the format's own (``singles_basic`` for singles, ``doubles_basic`` for doubles);
    so a doubles format or another policy trains with a singles experiment's command. A concrete
    name, which checkpoints record."""
    from mapleenv.encoders import default_encoder
    from trainer.config.games import model_encoders

    return (model_encoders(battle_format, model_kind) or (default_encoder(battle_format),))[0]


OmegaConf.register_new_resolver("maple.run_dir", run_dir, replace=True)
OmegaConf.register_new_resolver("maple.hydra_subdir", hydra_subdir, replace=True)
OmegaConf.register_new_resolver("maple.encoder", encoder, replace=True)
