"""Singles or doubles: settings and checkpoints that fit one game only, refused at start.

A double battle has two active Pokémon a side and a joint action space (2,209 actions in
gen 9, :mod:`mapleenv.actions.doubles`); some of Maple's parts read singles battles only.
Asking for one of them on a doubles format (or a doubles part on singles) is one line and
exit code 2 before anything starts, not a crash in an env worker mid-run (issue 32):

* the encoder must read the format's game (``env.encoder=doubles`` on doubles);
* ``model=attention`` reads entity tokens: the rich encoders' on singles, ``doubles3``'s on
  doubles (the encoder it gets when none is named); ``model.action_head=pair`` is doubles';
* decision-time search (``search.enabled``) reads singles battles;
* the ``calc`` opponent plays singles only; a ``policy:`` checkpoint or a resumed, evaluated
  or played checkpoint must have been trained on the same game.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mapleenv.showdown import is_doubles_format

# policy kinds that read given encoders only, per game (the first: ``env.encoder``'s default
# with that model, :func:`trainer.resolvers.encoder`)
MODEL_ENCODERS = {
    "singles": {"attention": ("singles_sets", "singles_entities")},
    "doubles": {"attention": ("doubles_entities",)},
}


def model_encoders(battle_format: str, model_kind: str) -> tuple[str, ...]:
    """The encoders ``model.kind`` reads on ``battle_format``'s game (empty: any of the
    game's)."""
    game = "doubles" if is_doubles_format(battle_format) else "singles"
    return MODEL_ENCODERS[game].get(str(model_kind), ())


def train_game_problems(env: Any, model_kind: str, action_head: str = "auto") -> list[str]:
    """The problems of a training config's Showdown ``env`` (a ``ShowdownEnvConfig``),
    ``model.kind`` and ``model.action_head`` with its format's game, as one-line messages
    (empty: none)."""
    from mapleenv.encoders import check_game_type, encoder_name, make_encoder
    from mapleenv.opponents import check_policy_files

    fmt = str(env.battle_format)
    problems = []
    try:
        check_game_type(make_encoder(env.encoder), str(env.encoder), fmt)
    except ValueError as exc:
        problems.append(f"env.encoder: {exc}")
    encoders = model_encoders(fmt, model_kind)
    if encoders and encoder_name(str(env.encoder)) not in encoders:
        game = "doubles" if is_doubles_format(fmt) else "singles"
        problems.append(
            f"model={model_kind} reads the {'/'.join(encoders)} encoder's tokens on "
            f"{fmt!r}, a {game} format: set env.encoder={encoders[0]}"
        )
    if str(action_head) == "pair" and not is_doubles_format(fmt):
        problems.append(
            f"model.action_head=pair scores doubles' joint actions (two slots) and {fmt!r} "
            "is a singles format: use model.action_head=auto or flat"
        )
    for key, opponent in (("env.opponent", env.opponent), ("env.teacher", env.teacher)):
        if opponent is None:
            continue
        try:
            check_policy_files(_plain(opponent), fmt)
        except ValueError as exc:
            problems.append(f"{key}: {exc}")
    return problems


def singles_only(key: str, battle_format: str, fix: str) -> str:
    """The one line for a singles-only setting ``key`` on a doubles format."""
    return (
        f"{key} reads singles battles (one active Pokémon a side) and {battle_format!r} "
        f"is a doubles format: {fix}"
    )


def live_game_problems(cfg: Any, snapshot: Mapping[str, Any], battle_format: str) -> list[str]:
    """Evaluate's and play's checks of ``cfg`` (``EvaluateConfig``/``PlayConfig``) and the
    checkpoint ``snapshot`` against ``battle_format``'s game (one-line messages)."""
    from mapleenv.opponents import check_policy_game

    problems = []
    try:
        check_policy_game(snapshot, battle_format, f"checkpoint {cfg.checkpoint}")
    except ValueError as exc:
        problems.append(str(exc))
    if is_doubles_format(battle_format) and cfg.search.enabled:
        problems.append(singles_only("search.enabled", battle_format, "drop search"))
    return problems


def _plain(value: Any) -> Any:
    """A config node (a mix's mapping) as plain Python."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
