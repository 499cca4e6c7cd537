"""How faithfully a world rebuilds a real battle: the world built from one seat's view and
the true opponent team, compared field by field with the simulator's own battle.

Used by ``tests/mapleenv/search/test_fidelity.py`` and ``scripts/search/search_fidelity.py``; the
fields are those of ``mapleenv/js/search/fields.js``.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from typing import Any

from mapleenv.search.host import SearchHost
from mapleenv.search.view import battle_view


def flatten(state: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"me": {"x": {"hp": 1}}}`` -> ``{"me.x.hp": 1}``."""
    out: dict[str, Any] = {}
    for key, value in state.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _same(key: str, truth: Any, built: Any) -> bool:
    if key.startswith("foe.") and key.endswith(".hp"):  # the opponent's HP is a percentage
        return built is not None and abs(built - truth) <= 1
    return truth == built


def compare(truth: dict[str, Any], built: dict[str, Any]) -> list[str]:
    """The tracked fields (flattened names) where ``built`` differs from ``truth``."""
    flat_truth, flat_built = flatten(truth), flatten(built)
    return [k for k, v in flat_truth.items() if not _same(k, v, flat_built.get(k))]


def dump_state(env: Any, horizons: str = "") -> dict[str, Any]:
    """The simulator host's ``dumpstate`` of a direct-backend ``PokemonEnv``'s battle from
    the agent's seat: ``state`` (tracked fields), ``truth`` (the opponent's sets), ``eval``
    (the hand evaluation) and ``rollouts`` (the hand evaluation after greedy playouts of
    each horizon in ``horizons``, e.g. ``"3,8"`` turns)."""
    backend = env._backend
    command = f"dumpstate {env.battle.player_role} {horizons}".strip()
    replies = backend.host.send(backend.session.battle_id, [command])
    return json.loads(next(d for kind, d in replies if kind == "state"))


def true_state(env: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The simulator's own state of the env's battle from the agent's seat, and the
    opponent's true sets."""
    data = dump_state(env)
    return data["state"], data["truth"]


def check_decision(env: Any, host: SearchHost) -> tuple[int, list[str]]:
    """Fields tracked and those that differ at the env's current decision."""
    truth, sets = true_state(env)
    built = host.request("world", view=battle_view(env.battle), seed=0, truth=sets)["state"]
    return len(flatten(truth)), compare(truth, built)


def summary(tracked: int, differing: Counter) -> dict[str, Any]:
    """Match rate and the fields that differ most often."""
    wrong = sum(differing.values())
    return {
        "fields": tracked,
        "match": round(1 - wrong / max(1, tracked), 4),
        "differing": dict(differing.most_common(15)),
    }


def measure(env: Any, states: int, seed: int = 0, min_turn: int = 2) -> dict[str, Any]:
    """Fidelity over ``states`` mid-battle decisions (turn ``min_turn`` on, no forced
    switch) of ``env``'s battles (a direct-backend ``PokemonEnv``; the agent's seat plays
    random legal actions): :func:`summary` plus ``states`` and ``battles``; differing
    fields by kind (``me.*.pp``: any own Pokémon's PP)."""
    from mapleenv.actions import legal_actions

    rng = random.Random(seed)
    tracked, differing, done, battles = 0, Counter(), 0, 0
    with SearchHost() as host:
        while done < states:
            env.reset(seed=seed + battles)
            battles += 1
            while done < states:
                battle = env.battle
                legal = legal_actions(battle)
                if battle.turn >= min_turn and not (battle.last_request or {}).get("forceSwitch"):
                    fields, wrong = check_decision(env, host)
                    tracked += fields
                    differing.update(re.sub(r"^(me|foe)\.[^.]+\.", r"\1.*.", k) for k in wrong)
                    done += 1
                _, _, terminated, truncated, _ = env.step(rng.choice(list(legal)))
                if terminated or truncated:
                    break
    return {"states": done, "battles": battles, **summary(tracked, differing)}
