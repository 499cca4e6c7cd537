"""The evaluation battle loop: a policy plays counted battles against named opponents.

Battles are split evenly between the envs and only each env's first ``battles / N``
battles count, so short battles are not over-represented; aborted battles are replayed.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mapleenv.opponents import check_policy_files
from mapleenv.policies import sample_actions
from mapleenv.spec import EnvSpec
from trainer.config import check_evaluation
from trainer.envs.episodes import finished_infos, finished_values
from trainer.envs.spaces import ObsAdapter
from trainer.evaluation.quality import battle_quality, mean_quality
from trainer.evaluation.stats import OpponentResult

log = logging.getLogger(__name__)


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
    on_end: Callable[[dict[str, Any]], None] | None = None,
    searcher: Any = None,
    outcomes: list[list[int]] | None = None,
    record_choices: bool = False,
) -> tuple[int, int, list[int]]:
    """Play ``battles`` counted battles on a SAME_STEP-autoreset vector env.

    Returns ``(wins, battles, turns per battle)``. ``on_battle(won)`` runs per counted
    battle (progress), ``on_end(info)`` too with the battle's final info. A ``searcher``
    (``mapleenv.search.Searcher``; the envs' spec has ``search_view``) re-decides the
    policy's picks by decision-time search. ``record_choices`` (the envs write replays):
    each env is told the policy's probability of its pick, which its replay shows.
    """
    n = envs.num_envs
    quota = np.array([battles // n + (i < battles % n) for i in range(n)])
    adapter = ObsAdapter(envs.single_observation_space, envs.single_action_space)
    generator = torch.Generator(device=device)
    generator.manual_seed(0 if seed is None else seed)
    obs, info = envs.reset(seed=seed)
    hidden = policy.initial_state(n, device)
    start = np.ones(n, dtype=np.float32)
    wins, turns = 0, []
    while (quota > 0).any():
        flat, mask = adapter.batch(obs)
        logits, _, hidden = policy(
            torch.from_numpy(flat).to(device),
            torch.from_numpy(mask).to(device),
            hidden,
            torch.from_numpy(start).to(device),
        )
        actions, _ = sample_actions(logits.float(), generator, greedy=not sample)
        picks = actions.cpu().numpy()
        if searcher is not None:
            picks = _searched(searcher, logits, picks, info)
        if record_choices:
            _note_probabilities(envs, logits, picks)
        obs, _, terminated, truncated, info = envs.step(picks)
        done = terminated | truncated
        start = done.astype(np.float32)
        battle_turns = finished_values(info, done, "turns")
        ends = finished_infos(info, done) if on_end is not None else {}
        # aborted battles (no result) and those beyond an env's quota do not count
        for i, won in finished_values(info, done, "won").items():
            if quota[i] <= 0:
                continue
            quota[i] -= 1
            wins += bool(won)
            if outcomes is not None:
                outcomes[i].append(int(bool(won)))
            if i in battle_turns:
                turns.append(int(battle_turns[i]))
            if on_end is not None and i in ends:
                on_end(ends[i])
            if on_battle is not None:
                on_battle(bool(won))
    return wins, battles, turns


def _note_probabilities(envs: Any, logits: torch.Tensor, picks: np.ndarray) -> None:
    """Give each env the policy's probability of its pick (``PokemonEnv.choice_probability``,
    shown in its replay): one more message to the workers per step, only with replays."""
    probs = torch.softmax(logits.float(), dim=-1).cpu().numpy()
    envs.set_attr("choice_probability", [float(probs[i, a]) for i, a in enumerate(picks)])


def _searched(searcher: Any, logits: torch.Tensor, picks: np.ndarray, info: dict) -> np.ndarray:
    """The policy's picks re-decided by search where an env sent its decision's view."""
    from mapleenv.search import Decision

    views, has_view = info.get("search_view"), info.get("_search_view")
    if views is None or has_view is None:
        return picks
    probs = torch.softmax(logits.float(), dim=-1).cpu().numpy()
    envs = [i for i in range(len(picks)) if has_view[i]]
    decisions = [Decision(json.loads(views[i]), probs[i], int(picks[i])) for i in envs]
    picks = picks.copy()
    for i, action in zip(envs, searcher.choose(decisions), strict=True):
        picks[i] = action
    return picks


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "opponent"


class QualityLog:
    """Play-quality counts of counted battles, from the protocol lines each env reports at
    a battle's end (``info["battle_log"]``, ``info["player_role"]``; the spec's
    ``battle_log``), on either backend."""

    def __init__(self) -> None:
        self.battles: list[dict[str, Any]] = []

    def __call__(self, info: dict[str, Any]) -> None:
        lines, side = info.get("battle_log"), info.get("player_role")
        if lines and side in ("p1", "p2"):
            self.battles.append(battle_quality(list(lines), side))

    def summary(self) -> dict[str, Any] | None:
        return mean_quality(self.battles) if self.battles else None


def evaluate_policy(
    policy: torch.nn.Module,
    spec: EnvSpec,
    opponents: Sequence[str],
    battles: int,
    *,
    num_envs: int = 4,
    sample: bool = True,
    device: torch.device | str = "cpu",
    progress: Callable[[str, int, int, int], None] | None = None,
    search: Any = None,
) -> list[OpponentResult]:
    """Evaluate ``policy`` against each of ``opponents`` (see module docs) on the envs of
    ``spec``, a checked ``EnvSpec`` (``EnvSpec(...).checked()``, a run's), trusted as it
    is: its ``seed`` (``None``: 0) seeds the battles, its ``replay_dir`` gets a folder per
    opponent and, with the server backend and no server, one local server (logging to its
    ``log_dir``) serves all opponents. ``progress(opponent, done, total, wins)`` is called
    as battles finish. ``search``: a ``mapleenv.search.SearchConfig`` re-deciding the
    policy's picks (docs/search.md).
    """
    check_evaluation(list(opponents), battles, num_envs)
    assert spec.is_checked, "evaluate_policy: give a checked spec (EnvSpec(...).checked())"
    for name in opponents:  # policy:<checkpoint>: the safe loader, before any worker
        check_policy_files(name, spec.battle_format)
    _check_game(policy, str(spec.encoder), spec.battle_format)
    # masked sampling: an illegal action is a bug; the battle log: play quality
    spec = dataclasses.replace(
        spec, on_illegal="raise", battle_log=True, search_view=search is not None
    )
    was_training = policy.training
    policy.eval()
    spec, pool = _shared_server(spec)
    searcher = _searcher(search, policy, str(spec.encoder), spec.mask_futile)
    play = {"device": device, "sample": sample, "progress": progress, "searcher": searcher}
    try:
        return [
            _evaluate_opponent(policy, spec, name, k, battles, num_envs, play)
            for k, name in enumerate(opponents)
        ]
    finally:
        if pool is not None:
            pool.stop()
        if searcher is not None:
            searcher.close()
        policy.train(was_training)


def _evaluate_opponent(
    policy: torch.nn.Module,
    spec: EnvSpec,
    name: str,
    k: int,
    battles: int,
    num_envs: int,
    play: dict[str, Any],
) -> OpponentResult:
    """The ``k``-th opponent ``name``'s battles on envs of its own (:func:`_opponent_envs`)."""
    seed = (spec.seed or 0) + k
    envs = _opponent_envs(spec, name, k, min(num_envs, battles))
    try:
        return _play_opponent(
            policy,
            envs,
            name,
            battles,
            seed=seed,
            quality=QualityLog(),
            record_choices=spec.replay_dir is not None,
            **play,
        )
    finally:
        envs.close()


def _shared_server(spec: EnvSpec) -> tuple[EnvSpec, Any]:
    """With the server backend and no server given, one local server for all opponents:
    the spec pointing at it, and its pool (None otherwise)."""
    if spec.backend != "server" or spec.server is not None:
        return spec, None
    from mapleenv.showdown import ServerPool

    pool = ServerPool(1, log_dir=spec.log_dir).start()
    return dataclasses.replace(spec, server=pool.configuration_for(0)), pool


def _opponent_envs(spec: EnvSpec, name: str, k: int, num_envs: int) -> Any:
    """The vector env of the ``k``-th opponent ``name``: its own seeds and replay folder."""
    from mapleenv import make_vector_env

    replays = spec.replay_dir
    replays = None if replays is None else str(Path(replays) / _safe_name(name))
    seed = (spec.seed or 0) + 1000 * k
    return make_vector_env(
        num_envs,
        dataclasses.replace(spec, opponent=name, replay_dir=replays, seed=seed),
        autoreset_mode="SameStep",
    )


def _searcher(search: Any, policy: torch.nn.Module, encoder: str, mask_futile: bool) -> Any:
    """A ``Searcher`` for ``search`` (a ``SearchConfig``), or None without one; with
    ``search.opponent=policy`` the policy itself models the opponent."""
    if search is None:
        return None
    from mapleenv.search import Searcher, make_opponent_model

    model = make_opponent_model(search, policy, encoder, mask_futile)
    return Searcher(search, opponent_model=model)


def _check_game(policy: torch.nn.Module, encoder: str, battle_format: str) -> None:
    """The encoder and the policy's action space fit the format's game (singles or
    doubles): a one-line ``ValueError`` before any env starts, not one per worker."""
    from poke_env.data import GenData

    from mapleenv.actions import action_space_size
    from mapleenv.encoders import check_game_type, make_encoder
    from mapleenv.showdown import game_type

    game = game_type(battle_format)
    check_game_type(make_encoder(encoder), encoder, battle_format)
    size = action_space_size(GenData.from_format(battle_format).gen, doubles=game == "doubles")
    n_actions = getattr(policy, "n_actions", size)
    if n_actions != size:
        raise ValueError(
            f"the policy has {n_actions} actions and {battle_format!r} ({game}) has {size}: "
            "evaluate it on the game (singles, doubles) and generation it was trained on"
        )


def _play_opponent(
    policy: torch.nn.Module,
    envs: Any,
    name: str,
    battles: int,
    *,
    device: torch.device | str,
    sample: bool,
    seed: int,
    progress: Callable[[str, int, int, int], None] | None,
    quality: QualityLog,
    searcher: Any = None,
    record_choices: bool = False,
) -> OpponentResult:
    """``battles`` counted battles against one opponent on ``envs``, logged; ``quality``
    counts each counted battle's play quality from its log (``record_choices``: see
    :func:`play_battles`)."""
    done = won_so_far = 0

    def on_battle(won: bool) -> None:
        nonlocal done, won_so_far
        done, won_so_far = done + 1, won_so_far + won
        if progress is not None:
            progress(name, done, battles, won_so_far)

    t0 = time.perf_counter()
    if searcher is not None:
        searcher.reset_stats()
    outcomes: list[list[int]] = [[] for _ in range(envs.num_envs)]
    wins, played, turns = play_battles(
        policy,
        envs,
        battles,
        device=device,
        sample=sample,
        seed=seed,
        on_battle=on_battle,
        on_end=quality,
        searcher=searcher,
        outcomes=outcomes,
        record_choices=record_choices,
    )
    mean_turns = float(np.mean(turns)) if turns else math.nan
    search = searcher.stats.as_dict() if searcher is not None else None
    result = OpponentResult(name, played, wins, mean_turns, quality.summary(), search)
    result.outcomes = ["".join(str(o) for o in env) for env in outcomes]
    log.info(
        "vs %s: %d/%d won (%.1f%%) in %.0f s",
        name,
        wins,
        played,
        100 * result.win_rate,
        time.perf_counter() - t0,
    )
    return result
