"""The rich observation's layout: named feature groups with their size and bounds.

The layout is data: :data:`LAYOUT` lists blocks (a block may repeat, e.g. once per
team slot), each a tuple of :class:`Feature` groups. Offsets, the ``low``/``high``
bound arrays and the table in ``docs/observation.md`` are all derived from it, so the
code, the Box and the docs cannot drift apart.

Layouts are versioned (:class:`Layout`): :data:`SINGLES_ENTITIES` (encoder
``singles_entities``; the module-level ``LAYOUT``, ``OFFSETS``, ``SIZE``, ``bounds``,
``feature_names`` and ``index`` are its) and :data:`SINGLES_SETS` (encoder ``singles_sets``:
``singles_entities`` unchanged, then the futile-move and random-battle-set blocks appended).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from mapleenv.encoders.features import vocab


@dataclass(frozen=True)
class Feature:
    """A group of ``size`` consecutive floats, each within ``[low, high]``."""

    name: str
    size: int
    low: float
    high: float
    scaling: str


@dataclass(frozen=True)
class Block:
    """A sequence of features, repeated ``repeat`` times back to back."""

    name: str
    repeat: int
    features: tuple[Feature, ...]
    description: str

    @cached_property
    def width(self) -> int:
        """Floats in one repetition."""
        return sum(f.size for f in self.features)

    @cached_property
    def offsets(self) -> dict[str, int]:
        """Offset of each feature group within one repetition."""
        out: dict[str, int] = {}
        i = 0
        for f in self.features:
            out[f.name] = i
            i += f.size
        return out


def _f(name: str, size: int, low: float, high: float, scaling: str) -> Feature:
    return Feature(name, size, low, high, scaling)


def _flag(name: str, scaling: str) -> Feature:
    return Feature(name, 1, 0.0, 1.0, scaling)


N_TYPES = len(vocab.TYPES)
N_TERA = len(vocab.TERA_TYPES)

# Dynamic features first; the rest of the block (from ``level``) only changes with the
# Pokémon's species/Tera/status/item/ability, so the encoder caches it as one vector.
POKEMON = (
    _flag("present", "1 if the slot holds a known Pokémon (own: always; opponent: revealed)"),
    _flag("active", "1 if on the field"),
    _flag("fainted", "1 if fainted"),
    _f("hp", 1, 0.0, 1.0, "HP fraction (unrevealed opponent: 1)"),
    _f(
        "offense",
        1,
        0.0,
        4.0,
        "best type multiplier of its known damaging moves (opponent "
        "with no move revealed: its STAB types) on the other side's "
        "active; 0 if none or fainted",
    ),
    _f(
        "defense",
        1,
        0.0,
        4.0,
        "worst-case type multiplier of the other side's active's "
        "current types on this Pokémon; 0 if none or fainted",
    ),
    _f("level", 1, 0.0, 1.0, "level / 100"),
    _f(
        "types",
        N_TYPES,
        0.0,
        1.0,
        "multi-hot of current types (after Tera; Stellar keeps "
        "the base types), order " + vocab.TYPE_ORDER_DOC,
    ),
    _f("tera_type", N_TERA, 0.0, 1.0, "one-hot Tera type (18 types + Stellar); 0 if unknown"),
    _flag("tera_known", "1 if the Tera type is known (own always; opponent once used)"),
    _flag("terastallized", "1 if terastallized"),
    _f("base_stats", 6, 0.0, 1.0, "base HP/Atk/Def/SpA/SpD/Spe / 255"),
    _f(
        "status",
        len(vocab.STATUSES),
        0.0,
        1.0,
        "one-hot " + "/".join(s.name for s in vocab.STATUSES) + " (none: all 0)",
    ),
    _f("status_turns", 1, 0.0, 1.0, "sleep/toxic counter, min(n, 8) / 8"),
    _flag("item_known", "1 if the held item is known (own always; opponent once revealed)"),
    _flag("item_none", "1 if known to hold no item (consumed, knocked off)"),
    _f(
        "item_flags",
        len(vocab.ITEM_GROUPS) + 1,
        0.0,
        1.0,
        "one-hot known item: " + ", ".join(vocab.ITEM_GROUPS) + ", other",
    ),
    _flag("ability_known", "1 if the ability is known (own; revealed or the only possible one)"),
    _f(
        "ability_flags",
        len(vocab.ABILITY_GROUPS) + 1,
        0.0,
        1.0,
        "one-hot known ability group: " + ", ".join(vocab.ABILITY_GROUPS) + ", other",
    ),
)

ACTIVE = (
    _f("boosts", len(vocab.BOOSTS), -1.0, 1.0, "stage / 6, order " + "/".join(vocab.BOOSTS)),
    _f("volatiles", len(vocab.VOLATILES), 0.0, 1.0, "flags: " + ", ".join(vocab.VOLATILES)),
)

# Dynamic features first; the rest (from ``base_power``) is static per move id.
MOVE = (
    _flag("present", "1 if the action slot holds a move"),
    _flag("available", "1 if the move can be chosen now"),
    _f("pp", 1, 0.0, 1.0, "current PP / max PP"),
    _flag("stab", "1 if a damaging move of a current or pre-Tera type of the user"),
    _f("effectiveness", 1, 0.0, 4.0, "type multiplier vs the opponent's active (0 if none)"),
    _f(
        "damage",
        1,
        0.0,
        1.0,
        "poke_env.calc mean roll / target's current HP, clipped; "
        "0 for status moves and moves that cannot be chosen now",
    ),
    _flag("ko", "1 if the calc's top roll reaches the target's current HP"),
    _f("base_power", 1, 0.0, 1.0, "min(base power, 250) / 250"),
    _f("type", N_TYPES, 0.0, 1.0, "one-hot move type"),
    _f("category", 3, 0.0, 1.0, "one-hot physical/special/status"),
    _f("accuracy", 1, 0.0, 1.0, "accuracy (always-hit: 1)"),
    _f("priority", 1, -1.0, 1.0, "clip(priority / 5, -1, 1)"),
    _f("effects", len(vocab.MOVE_EFFECTS), 0.0, 1.0, "flags: " + ", ".join(vocab.MOVE_EFFECTS)),
)

THREAT = (
    _f(
        "damage",
        1,
        0.0,
        1.0,
        "opponent's best expected damage vs our active / its current "
        "HP (poke_env.calc; revealed moves, else likely random-battle "
        "moves, else STAB stand-ins), clipped",
    ),
    _flag("ko", "1 if that move's top roll reaches our active's current HP"),
    _f("effectiveness", 1, 0.0, 4.0, "type multiplier of that move on our active"),
    _f("priority", 1, -1.0, 1.0, "clip(priority / 5, -1, 1) of that move"),
    _flag("revealed", "1 if that move was revealed (else a guess)"),
    _f("moves_known", 1, 0.0, 1.0, "revealed moves of the opponent's active / 4"),
)

SPEED = (
    _f("log_ratio", 1, -1.0, 1.0, "clip(log2(our effective Spe / theirs) / 2, -1, 1)"),
    _flag("faster", "1 if our active moves first at equal priority (Trick Room aware)"),
    _flag("tie", "1 on a speed tie"),
)

FIELD = (
    _f(
        "weather",
        len(vocab.WEATHERS),
        0.0,
        1.0,
        "one-hot: " + ", ".join(w.name.lower() for w in vocab.WEATHERS),
    ),
    _f(
        "fields",
        len(vocab.FIELDS),
        0.0,
        1.0,
        "flags: " + ", ".join(f.name.lower() for f in vocab.FIELDS),
    ),
    _f("own_side", len(vocab.SIDE_CONDITIONS), 0.0, 1.0, vocab.SIDE_DOC),
    _f("opponent_side", len(vocab.SIDE_CONDITIONS), 0.0, 1.0, "same, opponent's side"),
)

BATTLE = (
    _f("turn", 1, 0.0, 1.0, "min(turn, 100) / 100"),
    _flag("can_tera", "1 if we may terastallize this turn"),
    _flag("opponent_can_tera", "1 if the opponent has not terastallized yet"),
    _flag("can_switch", "1 if a switch is available"),
    _flag("force_switch", "1 if we must switch"),
    _flag("trapped", "1 if our active is trapped"),
    _f("switches", 1, 0.0, 1.0, "available switches / 5"),
    _f("own_alive", 1, 0.0, 1.0, "our non-fainted Pokémon / 6"),
    _f("opponent_alive", 1, 0.0, 1.0, "opponent's Pokémon not known fainted / 6"),
    _f("opponent_revealed", 1, 0.0, 1.0, "opponent's revealed Pokémon / 6"),
)

TEAM_SIZE = 6
MOVE_SLOTS = 4

LAYOUT: tuple[Block, ...] = (
    Block(
        "own_team", TEAM_SIZE, POKEMON, "our Pokémon in `battle.team` order (= switch actions 0-5)"
    ),
    Block(
        "opponent_team",
        TEAM_SIZE,
        POKEMON,
        "opponent's Pokémon in reveal order; unrevealed slots: all 0 but hp = 1",
    ),
    Block("own_active", 1, ACTIVE, "our active Pokémon (0 if none)"),
    Block("opponent_active", 1, ACTIVE, "opponent's active Pokémon (0 if none)"),
    Block(
        "moves",
        MOVE_SLOTS,
        MOVE,
        "our active's moves in action-slot order (actions 6-9, +16 with Tera); empty slots 0",
    ),
    Block("threat", 1, THREAT, "the opponent's active vs ours (0 while we must switch)"),
    Block(
        "speed",
        1,
        SPEED,
        "actives' speed comparison (stats, boosts, paralysis, Choice "
        "Scarf, Tailwind; abilities ignored)",
    ),
    Block("field", 1, FIELD, "weather, terrains and rooms, hazards and screens"),
    Block("battle", 1, BATTLE, "turn, gimmicks, switching, counts"),
)


FUTILITY = (
    _flag("futile", "1 if the move would surely fail or do nothing now (any of the next four)"),
    _flag(
        "user_state",
        "1 if our side's state makes it fail: Sleep Talk/Snore awake, Substitute up or HP <= "
        "1/4, Fake Out-like past the first turn out, healing or Rest at full HP, Rest asleep, "
        "hazard at max layers, screen/weather/terrain already up, boosts already +6; "
        "a Protect-like move right after a successful one (it works 1 time in 3 only)",
    ),
    _flag(
        "target_state",
        "1 if the target's state makes it fail: a status move into a statused target, a "
        "status-immune type (Toxic/Poison-Steel, Will-O-Wisp/Fire, paralysis/Electric), "
        "Safeguard, Misty (Electric for sleep) Terrain on a grounded target, a substitute, "
        "a volatile it already has, Safety Goggles vs powder; a sleep move under Sleep "
        "Clause Mod while another foe sleeps (not from its own Rest); Encore when the "
        "target's last move cannot be encored, or it has not moved since it came in and we "
        "move first; Strength Sap at -6 Attack; priority (Prankster, Gale Wings, Triage "
        "included) into Psychic Terrain on a grounded target (Flying, Air Balloon, a known "
        "or possible Levitate are not, unless our mold breaker ignores it)",
    ),
    _flag(
        "type_immune",
        "1 if the target's current types are immune (damaging moves, Thunder Wave, powder "
        "vs Grass, Leech Seed vs Grass, Prankster status moves vs Dark), or a Ground move "
        "vs Air Balloon; judged by the type the move is used with (-ate abilities, "
        "Normalize, Liquid Voice, Tera Blast once terastallized or without Tera left), "
        "never for a move whose type is set in battle (Weather Ball, Ivy Cudgel...)",
    ),
    _flag(
        "ability_immune",
        "1 if the target's known ability blocks it (Levitate, absorbing abilities, "
        "Soundproof, Bulletproof, Overcoat, Good as Gold, Magic Bounce, status-immune "
        "abilities, Dazzling-like vs priority, Wonder Guard); mold breakers ignore them",
    ),
    _f(
        "ability_risk",
        1,
        0.0,
        1.0,
        "share of the target's candidate abilities (random-battle sets, else possible "
        "abilities) that block it, while its ability is unknown; = ability_immune once known",
    ),
    _flag("needs_target_attack", "1 for moves that fail unless the target attacks (Sucker Punch)"),
)

SET_PROPERTIES = ("priority", "setup", "recovery", "pivot", "status", "hazard", "hazard_removal")

SETS = (
    _flag("known", "1 if the species has random-battle sets (pinned pokemon-showdown data)"),
    _f(
        "sets_left",
        1,
        0.0,
        1.0,
        "min(n, 4) / 4, n = sets still consistent with its revealed moves, ability and Tera "
        "type (0: none is; the features below then use all its sets)",
    ),
    _f("moves_left", 1, 0.0, 1.0, "min(m, 8) / 8, m = unrevealed moves of those sets' movepools"),
    _f(
        "properties",
        len(SET_PROPERTIES),
        0.0,
        1.0,
        "1 if revealed, else the share of those sets whose movepool has one: "
        + ", ".join(SET_PROPERTIES)
        + " (priority attack, boosting status move, self-healing, pivot, status-inflicting, "
        "entry hazard, hazard removal)",
    ),
    _f(
        "tera_types",
        N_TERA,
        0.0,
        1.0,
        "share of those sets listing each Tera type (18 types + Stellar); one-hot once known",
    ),
)

SETS_BLOCKS = (
    Block(
        "move_futility",
        MOVE_SLOTS,
        FUTILITY,
        "our active's moves in action-slot order: would the move fail now "
        "(encoders/features/futility.py)",
    ),
    Block(
        "opponent_sets",
        TEAM_SIZE,
        SETS,
        "opponent's Pokémon in reveal order: what its random-battle sets still allow "
        "(encoders/features/random_sets.py); unrevealed slots 0",
    ),
)


@dataclass(frozen=True)
class Layout:
    """A versioned observation layout: named blocks back to back."""

    name: str
    blocks: tuple[Block, ...]

    @cached_property
    def offsets(self) -> dict[str, int]:
        """Offset of each block's first repetition in the observation."""
        out: dict[str, int] = {}
        i = 0
        for block in self.blocks:
            out[block.name] = i
            i += block.width * block.repeat
        return out

    @cached_property
    def size(self) -> int:
        return sum(b.width * b.repeat for b in self.blocks)

    def block(self, name: str) -> Block:
        return next(b for b in self.blocks if b.name == name)

    def span(self, name: str) -> slice:
        """Floats of all repetitions of block ``name``."""
        b = self.block(name)
        return slice(self.offsets[name], self.offsets[name] + b.width * b.repeat)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The ``low`` and ``high`` float32 arrays of the whole observation."""
        low: list[float] = []
        high: list[float] = []
        for block in self.blocks:
            for _ in range(block.repeat):
                for f in block.features:
                    low += [f.low] * f.size
                    high += [f.high] * f.size
        return np.asarray(low, np.float32), np.asarray(high, np.float32)

    def feature_names(self) -> list[str]:
        """One name per float, ``block[rep].feature[k]`` (for debugging and tests)."""
        names: list[str] = []
        for block in self.blocks:
            for r in range(block.repeat):
                prefix = f"{block.name}[{r}]" if block.repeat > 1 else block.name
                for f in block.features:
                    if f.size == 1:
                        names.append(f"{prefix}.{f.name}")
                    else:
                        names += [f"{prefix}.{f.name}[{k}]" for k in range(f.size)]
        return names

    def index(self, block: str, feature: str, rep: int = 0, k: int = 0) -> int:
        """Position of element ``k`` of ``feature`` in repetition ``rep`` of ``block``."""
        b = self.block(block)
        return self.offsets[block] + rep * b.width + b.offsets[feature] + k


SINGLES_ENTITIES = Layout("singles_entities", LAYOUT)
SINGLES_SETS = Layout("singles_sets", LAYOUT + SETS_BLOCKS)
LAYOUTS = {layout.name: layout for layout in (SINGLES_ENTITIES, SINGLES_SETS)}


def for_size(size: int) -> Layout | None:
    """The layout of ``size`` floats (a policy's ``obs_dim``), or ``None``."""
    return next((lay for lay in LAYOUTS.values() if lay.size == size), None)


# the ``singles_entities`` layout's (v1) offsets and helpers, as before versioning
OFFSETS = SINGLES_ENTITIES.offsets
SIZE = SINGLES_ENTITIES.size
bounds = SINGLES_ENTITIES.bounds
feature_names = SINGLES_ENTITIES.feature_names
index = SINGLES_ENTITIES.index


def block_offsets() -> dict[str, int]:
    """Offset of each block's first repetition in the ``singles_entities`` observation."""
    return dict(SINGLES_ENTITIES.offsets)
