"""Showdown ids -> poke-engine names. The engine names species, moves, items, abilities and
volatiles by the same letters as Showdown's ids (``landorustherian``, ``choicespecs``); one
it does not know it reads as ``NONE`` (a move that does nothing, an item it calls unknown).
Each name is checked once against the engine itself (a one-Pokémon state written out by
``State.to_string``), so the mapping says what the installed engine models, not a list."""

from __future__ import annotations

import functools

import poke_engine as pe

# Showdown status ids -> the engine's
STATUS = {"": "none", "brn": "burn", "par": "paralyze", "slp": "sleep", "frz": "freeze",
          "psn": "poison", "tox": "toxic"}  # fmt: skip
# Showdown weather ids -> the engine's (Delta Stream's strong winds it does not model)
WEATHER = {"": "none", "sunnyday": "sun", "raindance": "rain", "sandstorm": "sand",
           "hail": "hail", "snowscape": "snow", "snow": "snow", "desolateland": "harshsun",
           "primordialsea": "heavyrain"}  # fmt: skip
TERRAIN = {"": "none", "electricterrain": "electricterrain", "grassyterrain": "grassyterrain",
           "mistyterrain": "mistyterrain", "psychicterrain": "psychicterrain"}  # fmt: skip
TYPES = frozenset(
    ["normal", "fire", "water", "electric", "grass", "ice", "fighting", "poison", "ground",
     "flying", "psychic", "bug", "rock", "ghost", "dragon", "dark", "steel", "fairy",
     "stellar"]
)  # fmt: skip


def engine_type(name: str) -> str:
    """A type's engine name (``typeless`` for none or ``???``)."""
    name = (name or "").lower()
    return name if name in TYPES else "typeless"


def _fields(pokemon: pe.Pokemon) -> list[str]:
    """The engine's own serialisation of a one-Pokémon side's first Pokémon."""
    state = pe.State(side_one=pe.Side(pokemon=[pokemon]))
    return state.to_string().split("=", 1)[0].split(",")


@functools.lru_cache(maxsize=4096)
def knows_species(name: str) -> bool:
    return bool(name) and _fields(pe.Pokemon(id=name))[0] == name.upper()


@functools.lru_cache(maxsize=4096)
def knows_move(name: str) -> bool:
    fields = _fields(pe.Pokemon(id="pikachu", moves=[pe.Move(id=name)]))
    return bool(name) and any(f.split(";")[0] == name.upper() for f in fields)


@functools.lru_cache(maxsize=4096)
def knows_item(name: str) -> bool:
    return bool(name) and _fields(pe.Pokemon(id="pikachu", item=name))[10] == name.upper()


@functools.lru_cache(maxsize=4096)
def knows_ability(name: str) -> bool:
    return bool(name) and _fields(pe.Pokemon(id="pikachu", ability=name))[8] == name.upper()


@functools.lru_cache(maxsize=512)
def knows_volatile(name: str) -> bool:
    side = pe.Side(pokemon=[pe.Pokemon(id="pikachu")], volatile_statuses={name})
    written = pe.State(side_one=side).to_string().split("=")[8]  # the side's volatiles
    return bool(name) and name.upper() in written.split(":")
