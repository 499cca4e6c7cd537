#!/usr/bin/env python
"""Per-step encode time of an encoder over real battle states; one JSON line.

Two poke-env players of one kind (``random``, ``max_power`` or ``heuristic``) play
``--battles`` gen9randombattle battles on a local Showdown server (started here unless
``--server-url``); every state either must decide on is copied. The copies are then
encoded in order with the ``--encoder`` (default ``singles_entities``; one encoder per player, kept
across battles, as in an env worker) and each encode is timed (wall clock and thread CPU
time). The damage-calculator figures are for encoders that use it (``singles_entities``,
``singles_sets``).

The encoding runs in ``--rounds`` slices alternating with slices of the raw simulator
(``mapleenv/js/sim_ceiling.js``: one Node process, random-vs-random in-process, warmed
for ``--sim-warmup`` s first, as in ``bench_env.py``), so the encode time is read against
the simulator's CPU time per turn under the same machine load; the JSON gives both and
the median of the per-round ratios.

    python scripts/bench/bench_encoder.py --battles 100 --players random --encoder singles_sets
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from poke_env.battle import AbstractBattle
from poke_env.player import MaxBasePowerPlayer, Player, RandomPlayer, SimpleHeuristicsPlayer
from poke_env.player.battle_order import BattleOrder

import mapleenv.encoders.builtin  # noqa: F401  (registers the entity encoders)
from mapleenv.encoders import ALIASES, ENCODERS, BattleEncoder, make_encoder
from mapleenv.measure import Ceiling
from mapleenv.showdown import ShowdownServer, external_server, find_showdown

sys.path.append(str(Path(__file__).resolve().parents[1]))  # scripts/: the shared _cli (last)
from _cli import script_parser  # noqa: E402

PLAYERS: dict[str, type[Player]] = {
    "random": RandomPlayer,
    "max_power": MaxBasePowerPlayer,
    "heuristic": SimpleHeuristicsPlayer,
}


def recording_player(base: type[Player]) -> type[Player]:
    """``base`` that keeps a copy of every state it decides on."""

    class Recording(base):  # type: ignore[valid-type, misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.states: list[AbstractBattle] = []

        def choose_move(self, battle: AbstractBattle) -> BattleOrder:
            self.states.append(copy.deepcopy(battle))
            return super().choose_move(battle)

    Recording.__name__ = f"Recording{base.__name__}"
    return Recording


def stats_us(ns: np.ndarray) -> dict[str, float]:
    us = ns / 1e3
    if not len(us):
        return {}
    return {
        "median": round(float(np.median(us)), 1),
        "p90": round(float(np.percentile(us, 90)), 1),
        "p99": round(float(np.percentile(us, 99)), 1),
        "mean": round(float(us.mean()), 1),
    }


class Timer:
    """Encodes states with one encoder per player and records per-encode costs."""

    def __init__(self, name: str = "singles_entities") -> None:
        self.name = name
        self.encoders: dict[str, BattleEncoder] = {}
        self.wall_ns: list[int] = []
        self.cpu_ns: list[int] = []
        self.calls: list[int] = []

    def encode(self, owner: str, battle: AbstractBattle) -> None:
        encoder = self.encoders.get(owner)
        if encoder is None:  # (setdefault would build a new encoder on every call)
            encoder = self.encoders[owner] = make_encoder(self.name)
        damage = getattr(encoder, "damage", None)  # the entity encoders' damage calculator
        calls = damage.calls if damage is not None else 0
        cpu = time.thread_time_ns()
        wall = time.perf_counter_ns()
        vec = encoder.encode(battle)
        self.wall_ns.append(time.perf_counter_ns() - wall)
        self.cpu_ns.append(time.thread_time_ns() - cpu)
        self.calls.append(damage.calls - calls if damage is not None else 0)
        if not np.isfinite(vec).all():
            raise RuntimeError(f"non-finite features in {battle.battle_tag}")


async def play(players: list[Player], battles: int) -> None:
    try:
        await players[0].battle_against(players[1], n_battles=battles)
    finally:
        for p in players:
            await p.ps_client.stop_listening()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = script_parser(__doc__)
    parser.add_argument(
        "--battles", type=int, default=100, help="battles to play (default %(default)s)"
    )
    parser.add_argument(
        "--players",
        choices=sorted(PLAYERS),
        default="random",
        help="the kind of both players (default %(default)s)",
    )
    parser.add_argument(
        "--concurrent", type=int, default=4, help="battles at once (default %(default)s)"
    )
    parser.add_argument(
        "--encoder",
        choices=sorted([*ENCODERS, *ALIASES]),
        default="singles_entities",
        help="the encoder to time (default %(default)s)",
    )
    parser.add_argument("--server-url", help="use this Showdown server instead of starting one")
    parser.add_argument(
        "--rounds", type=int, default=5, help="encode slices alternating with simulator slices"
    )
    parser.add_argument(
        "--sim-seconds",
        type=float,
        default=4.0,
        help="seconds of simulator timing per round (0: skip)",
    )
    parser.add_argument(
        "--sim-warmup",
        type=float,
        default=60.0,
        help="unmeasured seconds of the simulator before the first round",
    )
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    return parser.parse_args(argv)


def record_states(args: argparse.Namespace) -> list[Player]:
    """Two recording players of ``args.players`` after ``args.battles`` battles."""
    find_showdown()  # clear error when the npm package is missing
    server = None
    if args.server_url:
        config = external_server(args.server_url)
    else:
        server = ShowdownServer(log_dir=tempfile.mkdtemp(prefix="bench_encoder_")).start()
        config = server.server_configuration
    cls = recording_player(PLAYERS[args.players])
    players = [
        cls(
            battle_format="gen9randombattle",
            server_configuration=config,
            max_concurrent_battles=args.concurrent,
        )
        for _ in range(2)
    ]
    try:
        asyncio.run(play(players, args.battles))
    finally:
        if server is not None:
            server.stop()
    return players


def time_rounds(
    args: argparse.Namespace, timer: Timer, players: list[Player]
) -> tuple[list[dict], dict[str, list[float]]]:
    """Encode every recorded state in ``args.rounds`` slices, each followed by a slice of
    the raw simulator (unless ``--sim-seconds 0``); the rounds and the load around them."""
    # decision order within each player is the order it saw the states
    sequence = [(p.username, b) for p in players for b in p.states]  # type: ignore[attr-defined]
    ceiling = Ceiling(1, warmup=args.sim_warmup) if args.sim_seconds > 0 else None
    load_before = os.getloadavg()
    rounds = []
    for r in range(args.rounds):
        chunk = sequence[r * len(sequence) // args.rounds : (r + 1) * len(sequence) // args.rounds]
        start = len(timer.wall_ns)
        for owner, battle in chunk:
            timer.encode(owner, battle)
        encode_median = float(np.median(timer.wall_ns[start:])) / 1e3
        entry: dict[str, Any] = {"encode_median_us": round(encode_median, 1)}
        if ceiling is not None:
            sim = 1e3 * ceiling.measure(args.sim_seconds)["sim_cpu_ms_per_turn"]
            entry.update(sim_us_per_turn=round(sim, 1), ratio=round(encode_median / sim, 3))
        rounds.append(entry)
    load_after = os.getloadavg()
    if ceiling is not None:
        ceiling.close()
    load = {"loadavg_before": load_before, "loadavg_after": load_after}
    return rounds, {key: [round(x, 2) for x in value] for key, value in load.items()}


def summary(args: argparse.Namespace, timer: Timer, players: list[Player]) -> dict[str, Any]:
    """The JSON line's figures (the calculator's are zeros for an encoder without one)."""
    wall = np.asarray(timer.wall_ns, np.int64)
    cpu = np.asarray(timer.cpu_ns, np.int64)
    calls = np.asarray(timer.calls, np.int64)
    damage = [e.damage for e in timer.encoders.values() if hasattr(e, "damage")]
    n_calls = sum(d.calls for d in damage)
    lookups = n_calls + sum(d.hits for d in damage)
    return {
        "bench": "encoder",
        "encoder": args.encoder,
        "size": make_encoder(args.encoder).size,
        "players": args.players,
        "battles": players[0].n_finished_battles,
        "states": int(len(wall)),
        "encode_wall_us": stats_us(wall),
        "encode_cpu_us": stats_us(cpu),
        "encode_wall_us_no_calc_states": stats_us(wall[calls == 0]),
        "encode_wall_us_calc_states": stats_us(wall[calls > 0]),
        "states_without_calc": round(float(np.mean(calls == 0)), 3),
        "calc_calls_per_state": round(n_calls / max(len(wall), 1), 2),
        "calc_cache_hit_rate": round(1 - n_calls / max(lookups, 1), 3),
        "calc_call_us_mean": round(sum(d.calc_ns for d in damage) / max(n_calls, 1) / 1e3, 1),
        "calc_share_of_encode_time": round(sum(d.calc_ns for d in damage) / max(wall.sum(), 1), 3),
        "calc_failures": sum(d.failures for d in damage),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    players = record_states(args)
    timer = Timer(args.encoder)
    rounds, load = time_rounds(args, timer, players)
    result = summary(args, timer, players) | {"rounds": rounds}
    if args.sim_seconds > 0:
        sims = [r["sim_us_per_turn"] for r in rounds]
        result["sim_us_per_turn_median"] = round(float(np.median(sims)), 1)
        result["encode_over_sim_turn_median"] = round(
            float(np.median([r["ratio"] for r in rounds])), 3
        )
    result["machine"] = {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        **load,
    }
    line = json.dumps(result)
    print(line)
    if args.out:
        args.out.write_text(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
