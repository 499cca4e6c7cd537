"""Frozen Maple policies as opponents: ``policy:<checkpoint>`` and self-play's ``self``.

:class:`PolicyOpponent` is a non-listening poke-env ``Player`` (like the baselines of
:mod:`mapleenv.opponents`) that plays a frozen policy network **on CPU inside the env
worker**. It encodes its own view of the battle with the encoder the policy was trained
with, masks illegal actions exactly as the env does (:mod:`mapleenv.actions`), and keeps
its own recurrent state ``[layers, 1, hidden]`` per battle, zeroed at the battle's first
decision. It samples its actions from the policy (as in training) or plays greedily
(argmax). With ``mask_futile`` (``python -m trainer.play``'s key), or when the policy drawn
for the battle was trained so (its checkpoint's ``env.mask_futile``; a self-play snapshot's
run), it also masks the moves that surely fail, as the env's ``mask_futile`` does.
The network runs as its traced batch-1 step (:func:`mapleenv.policies.batch1_step`,
about half the CPU of the eager forward; eager where a trace would not match it).

Networks are rebuilt from a *snapshot* (:mod:`mapleenv.policies.snapshot`: the spec, the
weights, the encoder name, an optional pool ``id``) through Maple's own policy registry;
nothing in a snapshot names code to import, and no plugin a snapshot names is imported
(the env's own ``plugins``, which the user gave, are). A checkpoint file is read with the
safe loader (``weights_only=True``, :func:`mapleenv.policies.read_snapshot`), which also
refuses an encoder not registered here.

A Maple checkpoint file is such a mapping. Names (registered
with :func:`mapleenv.opponents.register_opponent`):

* ``policy:<checkpoint>`` -- the checkpoint's policy, sampling its actions;
* ``policy_greedy:<checkpoint>`` -- the same, playing the argmax;
* ``policy_search:<checkpoint>`` -- the same, its picks re-decided by decision-time search
  with the default settings (1 s a decision; :mod:`mapleenv.search`, docs/search.md), or
  those its name sets: ``policy_search:<checkpoint>?engine=poke-engine&time_ms=100``;
* ``self`` -- self-play: a pool of snapshots pushed by the trainer through
  ``envs.call("call_opponent", "sync_pool", ...)`` (:meth:`PolicyOpponent.sync_pool`);
  one snapshot is drawn per battle (uniformly, or by the weights the trainer pushes; seeded)
  and sampled from. With an empty pool it plays random legal moves.

Factories call ``torch.set_num_threads(1)``: workers share the CPU with the simulator.
"""

from __future__ import annotations

import logging
import math
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from poke_env.battle.abstract_battle import AbstractBattle
from poke_env.player.battle_order import BattleOrder
from poke_env.player.player import Player
from poke_env.ps_client import AccountConfiguration

from mapleenv.actions import mask_from_legal, teampreview_in_order
from mapleenv.encoders import BattleEncoder, make_encoder, playable_actions
from mapleenv.opponents import register_opponent, unique_username
from mapleenv.showdown.formats import game_type, is_doubles_format

logger = logging.getLogger(__name__)

_MAX_TRACKED_BATTLES = 16


@dataclass
class FrozenPolicy:
    """A policy network in eval mode on CPU, with its encoder name, pool id and whether it
    plays without the moves that surely fail (``mask_futile``: as its run's env)."""

    network: Any
    encoder: str
    n_actions: int
    obs_dim: int
    id: int = 0
    checksum: float = field(default=0.0)
    step: Any = None  # the network's batch-1 step, traced (mapleenv.policies.inference)
    mask_futile: bool = False

    @classmethod
    def from_snapshot(
        cls, snapshot: Mapping[str, Any], mask_futile: bool | None = None
    ) -> FrozenPolicy:
        """The frozen policy of ``snapshot`` (imports nothing it names; one read from a file
        comes through :func:`mapleenv.policies.read_snapshot`, which checks its encoder).
        ``mask_futile``: ``None`` takes the snapshot's (:func:`snapshot_mask_futile`)."""
        import torch

        from mapleenv.policies import (
            batch1_step,
            policy_from_snapshot,
            snapshot_encoder,
            snapshot_mask_futile,
        )

        network = policy_from_snapshot(snapshot)
        spec = snapshot["policy"]
        n_actions, obs_dim = int(spec["n_actions"]), int(spec["obs_dim"])
        with torch.no_grad():
            checksum = float(sum(p.double().abs().sum() for p in network.parameters()))
        return cls(
            network,
            snapshot_encoder(snapshot),
            n_actions,
            obs_dim,
            int(snapshot.get("id", 0)),
            checksum,
            batch1_step(network, obs_dim, n_actions),
            snapshot_mask_futile(snapshot) if mask_futile is None else bool(mask_futile),
        )


class PolicyOpponent(Player):
    """Plays frozen policies drawn per battle from a pool (see module docs).

    Args:
        policies: the initial pool (may be empty for self-play).
        sample: sample actions from the policy (``False``: argmax).
        seed: seeds the per-battle pool draw and action sampling.
        name: the opponent's name (``info["opponent"]`` for a single opponent).
        player_kwargs: poke-env ``Player`` arguments (``battle_format``...).
    """

    def __init__(
        self,
        policies: Iterable[FrozenPolicy] = (),
        *,
        sample: bool = True,
        seed: int | None = None,
        name: str = "policy",
        mask_futile: bool = False,
        searcher: Any = None,
        **player_kwargs: Any,
    ):
        import torch

        player_kwargs.setdefault(
            "account_configuration", AccountConfiguration(unique_username("p"), None)
        )
        player_kwargs.setdefault("log_level", logging.WARNING)
        super().__init__(start_listening=False, **player_kwargs)
        self.name = name
        self.sample = sample
        self.mask_futile = mask_futile  # as the env's setting: no move that surely fails
        self.pool: list[FrozenPolicy] = list(policies)
        self._rng = np.random.default_rng(seed)
        self._generator = torch.Generator().manual_seed(int(self._rng.integers(2**62)))
        self._encoders: dict[str, BattleEncoder] = {}
        # battle_tag -> (policy, recurrent state) of the battles being played
        self._states: OrderedDict[str, tuple[FrozenPolicy | None, Any]] = OrderedDict()
        self._warned_empty = False
        self.weights: dict[int, float] = {}  # snapshot id -> draw weight (default 1)
        self.decisions = 0  # decisions made by a policy network (not random fallbacks)
        # a mapleenv.search.Searcher: the policy's picks re-decided by decision-time search
        self.searcher = searcher

    # -- pool management (called through ``envs.call("call_opponent", ...)``)
    def sync_pool(
        self,
        add: Sequence[Mapping[str, Any]] = (),
        keep: Sequence[int] | None = None,
        weights: Mapping[int, float] | None = None,
    ) -> list[int]:
        """Add ``add`` snapshots, then keep only the ids in ``keep`` (``None``: all); with
        ``weights`` (snapshot id -> weight; ids it does not name weigh 1), later battles draw
        their snapshot in proportion (a league sampled by how often it still beats the
        learner). Returns the pool's ids. Battles in progress keep the policy they started
        with."""
        have = set(self.pool_ids())
        for snapshot in add:  # a snapshot already in the pool is not added twice
            if int(snapshot.get("id", 0)) not in have:
                self.pool.append(FrozenPolicy.from_snapshot(snapshot))
                have.add(int(snapshot.get("id", 0)))
        if keep is not None:
            wanted = set(keep)
            self.pool = [p for p in self.pool if p.id in wanted]
        if weights is not None:
            if any(not math.isfinite(w) or w < 0 for w in weights.values()):
                raise ValueError(f"pool weights must be finite and >= 0, got {dict(weights)}")
            self.weights = {int(k): float(v) for k, v in weights.items()}
        return self.pool_ids()

    def pool_ids(self) -> list[int]:
        return [p.id for p in self.pool]

    def pool_stats(self) -> dict[str, Any]:
        """Pool ids, per-id parameter checksums (sum of absolute values: to verify
        pushed weights) and the number of decisions the networks made."""
        return {
            "ids": self.pool_ids(),
            "checksums": {p.id: p.checksum for p in self.pool},
            "weights": {p.id: self.weights.get(p.id, 1.0) for p in self.pool},
            "decisions": self.decisions,
        }

    def policy_id_for(self, battle_tag: str) -> int | None:
        """The pool id of the snapshot playing ``battle_tag`` (``None``: not known or a
        random fallback); the env reports it as ``info["opponent_policy_id"]``."""
        entry = self._states.get(battle_tag)
        return None if entry is None or entry[0] is None else entry[0].id

    def battle_state(self, battle_tag: str) -> Any:
        """The recurrent state kept for ``battle_tag`` (``None`` if not playing it)."""
        entry = self._states.get(battle_tag)
        return None if entry is None else entry[1]

    # -- playing
    def _encoder(self, name: str) -> BattleEncoder:
        if name not in self._encoders:
            self._encoders[name] = make_encoder(name)
        return self._encoders[name]

    def _draw(self) -> FrozenPolicy | None:
        """A pool member for a new battle: uniform, or by the pushed weights."""
        if not self.pool:
            return None
        weights = np.array([self.weights.get(p.id, 1.0) for p in self.pool])
        if weights.sum() <= 0:
            return self.pool[int(self._rng.integers(len(self.pool)))]
        return self.pool[int(self._rng.choice(len(self.pool), p=weights / weights.sum()))]

    def _start_battle(self, tag: str) -> tuple[FrozenPolicy | None, Any]:
        policy = self._draw()
        state = policy.network.initial_state(1) if policy is not None else ()
        self._states[tag] = (policy, state)
        while len(self._states) > _MAX_TRACKED_BATTLES:
            self._states.popitem(last=False)
        return policy, state

    def choose_move(self, battle: AbstractBattle) -> BattleOrder:
        import torch

        tag = battle.battle_tag
        start = tag not in self._states
        policy, state = self._start_battle(tag) if start else self._states[tag]
        mask_futile = self.mask_futile or (policy is not None and policy.mask_futile)
        legal = playable_actions(battle, mask_futile)
        if policy is None or not legal:
            if policy is None and not self._warned_empty:
                logger.warning("%s: no policy in the pool yet; playing random moves", self.name)
                self._warned_empty = True
            return self.choose_random_move(battle)
        encoder = self._encoder(policy.encoder)
        obs = np.asarray(encoder.encode(battle), dtype=np.float32)
        if obs.shape != (policy.obs_dim,):
            raise ValueError(
                f"{self.name}: encoder {policy.encoder!r} gives {obs.shape[0]} "
                f"features, the policy expects {policy.obs_dim}"
            )
        np.clip(obs, encoder.low, encoder.high, out=obs)
        mask = mask_from_legal(legal, policy.n_actions)
        with torch.inference_mode():
            logits, _, state = (policy.step or policy.network)(
                torch.from_numpy(obs)[None],
                torch.from_numpy(mask).bool()[None],
                state,
                torch.tensor([1.0 if start else 0.0]),
            )
            searching = self.searcher is not None
            probs = torch.softmax(logits[0].float(), dim=-1) if self.sample or searching else None
            if self.sample:
                action = int(torch.multinomial(probs, 1, generator=self._generator))
            else:
                action = int(torch.argmax(logits[0]))
        if searching:
            action = self._searched(battle, legal, probs.numpy(), action)
        self._states[tag] = (policy, state)
        self._states.move_to_end(tag)
        self.decisions += 1
        order = legal.get(action)
        if order is None:  # cannot happen with a masked policy; stay legal anyway
            logger.warning("%s chose illegal action %d; playing a random move", self.name, action)
            return self.choose_random_move(battle)
        return order

    def _searched(
        self, battle: AbstractBattle, legal: dict[int, BattleOrder], probs: np.ndarray, pick: int
    ) -> int:
        """The policy's pick re-decided by the searcher (docs/search.md)."""
        from mapleenv.search import Decision, readable_view

        view = readable_view(battle, legal)  # None: unreadable, the policy's pick (warned)
        if view is None:
            return pick
        return int(self.searcher.choose([Decision(view, probs, pick)])[0])

    def teampreview(self, battle: AbstractBattle) -> str:
        """As the agent does: its team in the given order (not a policy decision)."""
        return teampreview_in_order(battle)

    def reset_battles(self) -> None:
        super().reset_battles()
        self._states.clear()


POLICY_PREFIXES = ("policy", "policy_greedy", "policy_search")
SINGLES_ONLY = frozenset({"calc"})  # baselines that cannot play double battles


def check_policy_files(opponent: str | Mapping[str, Any], battle_format: str | None = None) -> None:
    """Read every ``policy:<checkpoint>`` member of ``opponent`` (a name or a mix) with the
    safe loader here, before env workers start: a file that is refused (not format 2, not a
    policy checkpoint, an encoder not registered in this process) is one line
    (:class:`mapleenv.policies.CheckpointError`) instead of an error in every worker. With
    ``battle_format``, a member that cannot play its game is a one-line ``ValueError`` too:
    a policy of the other game (singles vs doubles, :func:`check_policy_game`),
    ``policy_search:`` or ``calc`` on doubles."""
    from mapleenv.opponents.mix import mix_members

    for name in mix_members(opponent):
        prefix, _, argument = name.partition(":")
        if prefix in POLICY_PREFIXES and argument:
            from mapleenv.policies import read_snapshot  # torch: only with a policy member

            if prefix == "policy_search":
                argument = _checked_search_options(argument)

            snapshot = read_snapshot(argument)
            if battle_format is not None:
                _check_fits(name, snapshot, battle_format)
        elif name in SINGLES_ONLY and battle_format and is_doubles_format(battle_format):
            raise ValueError(
                f"opponent {name!r} plays singles only, not {battle_format!r} (a doubles "
                "format): use random, max_power, heuristic or policy:<checkpoint>"
            )


def _checked_search_options(argument: str) -> str:
    """The checkpoint of a ``policy_search:`` argument, its search options checked here (a
    bad one, or an engine not installed, is one line before env workers start)."""
    from mapleenv.search import SearchConfig, require_engine_for, split_search_options

    path, options = split_search_options(argument)
    require_engine_for(SearchConfig(**options))
    return path


def _check_fits(name: str, snapshot: Mapping[str, Any], battle_format: str) -> None:
    """The ``policy*:`` opponent ``name`` can play ``battle_format`` (module docs)."""
    check_policy_game(snapshot, battle_format, f"opponent {name}")
    if name.startswith("policy_search:") and is_doubles_format(battle_format):
        raise ValueError(
            f"opponent {name}: decision-time search plays singles only, not "
            f"{battle_format!r} (a doubles format): use policy:<checkpoint>"
        )


def policy_game(snapshot: Mapping[str, Any]) -> str:
    """``"singles"`` or ``"doubles"``: the battles a snapshot's policy was trained on, read
    from its encoder (its ``game_types``), else from its action count (a doubles joint
    space ``S * S``, 2,209 in gen 9: :func:`mapleenv.policies.doubles_slots`)."""
    from mapleenv.encoders import game_types
    from mapleenv.policies import doubles_slots, snapshot_encoder

    try:
        games = game_types(make_encoder(snapshot_encoder(snapshot)))
    except Exception:  # a plugin's encoder not imported here: the action count says it
        games = ()
    if len(games) == 1:
        return games[0]
    n_actions = int((snapshot.get("policy") or {}).get("n_actions", 0))
    return "doubles" if doubles_slots(n_actions) else "singles"


def check_policy_game(snapshot: Mapping[str, Any], battle_format: str, source: str) -> None:
    """A one-line ``ValueError`` when ``snapshot``'s policy (from ``source``) was trained on
    singles and ``battle_format`` is doubles, or the reverse: its observation and action
    sizes cannot fit the other game's."""
    game = game_type(battle_format)
    trained = policy_game(snapshot)
    if trained == game:
        return
    from mapleenv.policies import snapshot_encoder

    spec = snapshot.get("policy") or {}
    raise ValueError(
        f"{source} is a {trained} policy (encoder {snapshot_encoder(snapshot)!r}, "
        f"{spec.get('n_actions', '?')} actions) and {battle_format!r} is a {game} format: "
        f"a {trained} checkpoint cannot play {game}; use a {trained} format or a "
        f"checkpoint trained on {game}"
    )


def _set_worker_threads() -> None:
    import torch

    torch.set_num_threads(1)


def _policy_factory(sample: bool, search: bool = False) -> Callable[..., PolicyOpponent]:
    def factory(
        argument: str, *, battle_format: str, seed: int | None = None, **kwargs: Any
    ) -> PolicyOpponent:
        if not argument:
            raise ValueError("policy opponents need a checkpoint: 'policy:<path>'")
        options: dict[str, Any] = {}
        if search:  # policy_search:<path>?engine=poke-engine&time_ms=100 (search.* fields)
            from mapleenv.search import split_search_options

            argument, options = split_search_options(argument)
        _set_worker_threads()
        from mapleenv.policies import read_snapshot

        snapshot = read_snapshot(argument)
        prefix = "policy_search" if search else "policy" if sample else "policy_greedy"
        _check_fits(f"{prefix}:{argument}", snapshot, battle_format)  # singles vs doubles
        policy = FrozenPolicy.from_snapshot(snapshot)
        searcher = None
        if search:
            from mapleenv.search import SearchConfig, Searcher

            searcher = Searcher(SearchConfig(**{"seed": (seed or 0) % 2**32, **options}))
        return PolicyOpponent(
            [policy],
            sample=sample,
            seed=seed,
            name=f"{prefix}:{argument}",
            battle_format=battle_format,
            searcher=searcher,
            **kwargs,
        )

    return factory


def _self_factory(
    argument: str, *, battle_format: str, seed: int | None = None, **kwargs: Any
) -> PolicyOpponent:
    if argument:
        raise ValueError(f"'self' takes no argument, got 'self:{argument}'")
    _set_worker_threads()
    return PolicyOpponent(
        sample=True, seed=seed, name="self", battle_format=battle_format, **kwargs
    )


register_opponent("policy", _policy_factory(sample=True))
register_opponent("policy_greedy", _policy_factory(sample=False))
register_opponent("policy_search", _policy_factory(sample=True, search=True))
register_opponent("self", _self_factory)
