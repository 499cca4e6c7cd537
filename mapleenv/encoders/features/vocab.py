"""Fixed vocabularies of the rich encoder: types, statuses, item/ability groups, flags.

Items and abilities cannot get a learned embedding inside a fixed ``Box``, so a known
item or ability is encoded as a one-hot over a few hand-picked high-impact groups plus
"other" (see ``docs/observation.md``). Groups are sets of poke-env ids (``to_id_str``).
"""

from __future__ import annotations

from poke_env.battle import Effect, Field, PokemonType, SideCondition, Status, Weather

TYPES: tuple[PokemonType, ...] = tuple(
    t for t in PokemonType if t not in (PokemonType.THREE_QUESTION_MARKS, PokemonType.STELLAR)
)
TERA_TYPES: tuple[PokemonType, ...] = (*TYPES, PokemonType.STELLAR)
TYPE_INDEX = {t: i for i, t in enumerate(TYPES)}
TERA_INDEX = {t: i for i, t in enumerate(TERA_TYPES)}
TYPE_ORDER_DOC = "/".join(t.name.lower() for t in TYPES)

STATUSES: tuple[Status, ...] = tuple(s for s in Status if s is not Status.FNT)
STATUS_INDEX = {s: i for i, s in enumerate(STATUSES)}

BOOSTS = ("atk", "def", "spa", "spd", "spe", "accuracy", "evasion")

WEATHERS: tuple[Weather, ...] = tuple(w for w in Weather if w is not Weather.UNKNOWN)
WEATHER_INDEX = {w: i for i, w in enumerate(WEATHERS)}

FIELDS: tuple[Field, ...] = (
    Field.ELECTRIC_TERRAIN,
    Field.GRASSY_TERRAIN,
    Field.MISTY_TERRAIN,
    Field.PSYCHIC_TERRAIN,
    Field.TRICK_ROOM,
    Field.GRAVITY,
    Field.MAGIC_ROOM,
    Field.WONDER_ROOM,
)
FIELD_INDEX = {f: i for i, f in enumerate(FIELDS)}

# Side condition -> divisor of its stored value (layers), or None for a presence flag.
SIDE_CONDITIONS: dict[SideCondition, int | None] = {
    SideCondition.STEALTH_ROCK: None,
    SideCondition.SPIKES: 3,
    SideCondition.TOXIC_SPIKES: 2,
    SideCondition.STICKY_WEB: None,
    SideCondition.REFLECT: None,
    SideCondition.LIGHT_SCREEN: None,
    SideCondition.AURORA_VEIL: None,
    SideCondition.TAILWIND: None,
    SideCondition.SAFEGUARD: None,
    SideCondition.MIST: None,
}
SIDE_INDEX = {c: i for i, c in enumerate(SIDE_CONDITIONS)}
SIDE_DOC = "our side: " + ", ".join(
    c.name.lower() + (f" (layers / {d})" if d else "") for c, d in SIDE_CONDITIONS.items()
)
SCREENS = frozenset({SideCondition.REFLECT, SideCondition.LIGHT_SCREEN, SideCondition.AURORA_VEIL})

PERISH = frozenset({Effect.PERISH0, Effect.PERISH1, Effect.PERISH2, Effect.PERISH3})
TRAPS = frozenset({Effect.TRAPPED, Effect.PARTIALLY_TRAPPED})
# Volatile flags of an active Pokémon: effect sets, then flags read from the Pokémon.
VOLATILE_EFFECTS: dict[str, frozenset[Effect]] = {
    "substitute": frozenset({Effect.SUBSTITUTE}),
    "leech_seed": frozenset({Effect.LEECH_SEED}),
    "confusion": frozenset({Effect.CONFUSION}),
    "taunt": frozenset({Effect.TAUNT}),
    "encore": frozenset({Effect.ENCORE}),
    "yawn": frozenset({Effect.YAWN}),
    "perish": PERISH,
    "salt_cure": frozenset({Effect.SALT_CURE}),
    "destiny_bond": frozenset({Effect.DESTINY_BOND}),
    "trapped": TRAPS,
}
VOLATILES = (*VOLATILE_EFFECTS, "must_recharge", "preparing", "first_turn", "protected_last")

ITEM_GROUPS: dict[str, frozenset[str]] = {
    "leftovers": frozenset({"leftovers", "blacksludge"}),
    "lifeorb": frozenset({"lifeorb"}),
    "heavydutyboots": frozenset({"heavydutyboots"}),
    "choiceband": frozenset({"choiceband"}),
    "choicespecs": frozenset({"choicespecs"}),
    "choicescarf": frozenset({"choicescarf"}),
    "assaultvest": frozenset({"assaultvest"}),
    "eviolite": frozenset({"eviolite"}),
    "focussash": frozenset({"focussash"}),
    "rockyhelmet": frozenset({"rockyhelmet"}),
    "airballoon": frozenset({"airballoon"}),
    "boosterenergy": frozenset({"boosterenergy"}),
    "weaknesspolicy": frozenset({"weaknesspolicy"}),
    "status_orb": frozenset({"flameorb", "toxicorb"}),
    "berry": frozenset(),  # any id ending in "berry"
}
ITEM_INDEX = {item: i for i, (_, items) in enumerate(ITEM_GROUPS.items()) for item in items}
BERRY_INDEX = list(ITEM_GROUPS).index("berry")
OTHER_ITEM = len(ITEM_GROUPS)

ABILITY_GROUPS: dict[str, frozenset[str]] = {
    "levitate": frozenset({"levitate"}),
    "intimidate": frozenset({"intimidate"}),
    "type_absorb": frozenset(
        {
            "waterabsorb",
            "voltabsorb",
            "stormdrain",
            "lightningrod",
            "motordrive",
            "sapsipper",
            "flashfire",
            "dryskin",
            "eartheater",
            "wellbakedbody",
            "windrider",
            "purifyingsalt",
        }
    ),
    "damage_cut": frozenset(
        {
            "multiscale",
            "shadowshield",
            "thickfat",
            "filter",
            "solidrock",
            "prismarmor",
            "fluffy",
            "icescales",
            "furcoat",
            "heatproof",
            "tabletsofruin",
            "swordofruin",
            "beadsofruin",
            "vesselofruin",
        }
    ),
    "sturdy": frozenset({"sturdy", "disguise", "iceface", "terashell"}),
    "power": frozenset(
        {
            "hugepower",
            "purepower",
            "hustle",
            "gorillatactics",
            "toughclaws",
            "sheerforce",
            "technician",
            "adaptability",
            "ironfist",
            "strongjaw",
            "sharpness",
            "punkrock",
            "transistor",
            "dragonsmaw",
            "rockypayload",
            "steelworker",
            "tintedlens",
            "aerilate",
            "pixilate",
            "refrigerate",
            "galvanize",
            "supremeoverlord",
            "waterbubble",
        }
    ),
    "snowball": frozenset(
        {
            "moxie",
            "beastboost",
            "speedboost",
            "contrary",
            "defiant",
            "competitive",
            "chillingneigh",
            "grimneigh",
            "asoneglastrier",
            "asonespectrier",
            "moody",
        }
    ),
    "paradox": frozenset({"protosynthesis", "quarkdrive"}),
    "weather_setter": frozenset(
        {
            "drought",
            "drizzle",
            "sandstream",
            "snowwarning",
            "orichalcumpulse",
            "desolateland",
            "primordialsea",
            "deltastream",
        }
    ),
    "terrain_setter": frozenset(
        {"electricsurge", "grassysurge", "psychicsurge", "mistysurge", "hadronengine", "seedsower"}
    ),
    "weather_speed": frozenset(
        {"swiftswim", "chlorophyll", "sandrush", "slushrush", "surgesurfer", "unburden"}
    ),
    "status_user": frozenset(
        {"guts", "marvelscale", "poisonheal", "quickfeet", "toxicboost", "flareboost"}
    ),
    "regenerator": frozenset({"regenerator", "naturalcure"}),
    "magicguard": frozenset({"magicguard"}),
    "prankster": frozenset({"prankster", "galewings", "triage"}),
    "unaware": frozenset({"unaware"}),
    "moldbreaker": frozenset({"moldbreaker", "teravolt", "turboblaze", "myceliummight"}),
    "protean": frozenset({"protean", "libero"}),
    "reflect_status": frozenset({"magicbounce", "goodasgold"}),
    "contact_punish": frozenset(
        {"roughskin", "ironbarbs", "flamebody", "static", "poisonpoint", "effectspore"}
    ),
}
ABILITY_INDEX = {a: i for i, (_, abilities) in enumerate(ABILITY_GROUPS.items()) for a in abilities}
OTHER_ABILITY = len(ABILITY_GROUPS)

MOVE_EFFECTS = (
    "heal",
    "boost_self",
    "lower_target",
    "inflict_status",
    "set_hazard",
    "clear_hazard",
    "pivot",
    "protect",
    "recoil",
    "force_switch",
    "set_field",
)
HAZARDS = frozenset(
    {
        SideCondition.STEALTH_ROCK,
        SideCondition.SPIKES,
        SideCondition.TOXIC_SPIKES,
        SideCondition.STICKY_WEB,
    }
)
HAZARD_CLEARERS = frozenset({"rapidspin", "defog", "tidyup", "mortalspin", "courtchange"})
