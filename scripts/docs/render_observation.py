"""Render docs/observation.md from the encoders (``python scripts/docs/render_observation.py``).

Each table comes from an encoder's ``BLOCKS`` or layout (mapleenv/encoders/), so the documented
features always match the code; ``--check`` exits 1 if the page differs (a test checks it too).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mapleenv.encoders.doubles import basic as doubles
from mapleenv.encoders.doubles import calc as doubles_calc
from mapleenv.encoders.doubles import entities as doubles_entities
from mapleenv.encoders.features import layout, vocab
from mapleenv.encoders.singles import basic as simple

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "observation.md"

INTRO = """\
# Observation: the battle encoders

An encoder turns a battle, seen from our side, into one float32 vector whose every feature
lies inside fixed bounds (the `low`/`high` of the observation `Box`), never NaN or inf.
`env.encoder=<name>` picks one: for singles `singles_basic` (a singles format's default),
`singles_entities` or `singles_sets` (`singles_entities` plus futile-move and random-battle-set
features; `model=attention` needs one of the two); for doubles `doubles_basic` (a doubles format's
default), `doubles_calc` (`doubles_basic` plus stats, speed, damage estimates and matchups) or
`doubles_entities` (`doubles_calc` plus a block per Pokémon and per move; `model=attention` reads
it on doubles); `docs/extending.md` adds your own. This page is generated from
`mapleenv/encoders/singles/basic.py`, `mapleenv/encoders/doubles/basic.py`, `calc.py`,
`entities.py` and `mapleenv/encoders/features/layout.py`
(`python scripts/docs/render_observation.py`); a test fails if it drifts from the code. The
names before the encoders were grouped by game (`simple`, `rich`, `rich2`, `doubles`,
`doubles2`, `doubles3`) still name the same encoders (`mapleenv.encoders.ALIASES`), so
checkpoints that recorded them load unchanged.

## `singles_basic`: {simple_size} hand-made features (the singles default)

`mapleenv.encoders.singles.basic.SinglesBasicEncoder`: a small baseline encoding, cheap to compute,
of what is on the field. Absent Pokémon (no active, an empty team slot) leave their features
at 0.

| block | size | offset | range | content |
|---|---|---|---|---|
{simple_rows}| **total** | **{simple_size}** | | | |

## `doubles_basic`: {doubles_size} hand-made features (double battles)

`mapleenv.encoders.doubles.basic.DoublesBasicEncoder`: the singles_basic encoder's features for two
active Pokémon a side, plus what doubles adds: each move's damage multiplier against each foe;
spread, Protect, Fake Out, redirection, ally-support and weather or terrain moves; who is
on a first turn out; Trick Room, Tailwinds, screens, weather and terrain; which slots
must switch. It reads double battles only (a singles encoder on a doubles format, or this
one on a singles format, is refused at start). Move columns follow the doubles action
numbering (`mapleenv/actions/doubles.py`): our slot *s*, move *k* is sub-action 7 + 5*k* + target.

| block | size | offset | range | content |
|---|---|---|---|---|
{doubles_rows}| **total** | **{doubles_size}** | | | |

## `doubles_calc`: {doubles2_size} features (double battles)

`mapleenv.encoders.doubles.calc.DoublesCalcEncoder`: the `doubles_basic` features above, unchanged,
then what a damage-reading player decides with: each active's level and stats (ours exact,
the foe's estimated with random-battle EVs/IVs), who moves first between each of our
actives and each foe, each move's expected share of each foe's HP (the damage formula's
middle roll with STAB, type, spread, burn and boosts; no abilities, items, weather, screens
or crits), its category, STAB and accuracy, how each of our six matches up against the two
foes, Terastallization and the turn. Doubles only.

| block | size | offset | range | content |
|---|---|---|---|---|
{doubles2_rows}| **total** | **{doubles2_size}** | | | |

## `doubles_entities`: {doubles3_size} features (double battles, `model=attention`)

`mapleenv.encoders.doubles.entities.DoublesEntitiesEncoder`: the `doubles_calc` vector above,
unchanged, then the entities `model=attention` reads as tokens on doubles (docs/doubles.md, "The
attention policy"): a block per Pokémon, ours in `battle.team` order and the opponent's in reveal
order, with `singles_entities`'s Pokémon features (below, `own_team` / `opponent_team`; `offense`
and `defense` against the better of the other side's two actives), which active slot it holds,
and while active `singles_entities`'s active features (`own_active`: boosts, volatiles); and a
block per move slot of our two actives.

| block | size | offset | content |
|---|---|---|---|
{doubles3_rows}| **total** | **{doubles3_size}** | | |

`moves` (width {doubles3_move_width}): `present`, `available`, `pp`, `stab` and the static move
features (`base_power` on) as in `singles_entities`'s `moves` block below; `effectiveness` (2, [0,
4]): the type multiplier on the foe's a and b (0 for an empty foe slot or a status move); `damage`
(2, [0, 1]): `doubles_calc`'s `move_estimate` of the move against the foe's a and b.

## `singles_entities`: {size} features

`encoder="singles_entities"` (`mapleenv.encoders.singles.entities.SinglesEntitiesEncoder`): what a
good player looks at.

Slots follow poke-env's `SinglesEnv` action numbering: own team slot *i* is switch action
*i* (`battle.team` order) and move slot *k* is action 6+*k* (22+*k* with Tera), the first
four known moves of the active Pokémon (or the request's own moves, e.g. Struggle).

## `singles_entities` blocks

| block | size | offset | content |
|---|---|---|---|
"""


def _simple_rows(blocks: tuple = simple.BLOCKS) -> str:
    rows, offset = [], 0
    for b in blocks:
        rows.append(
            f"| `{b.name}` | {b.size} | {offset} | [{b.low:g}, {b.high:g}] | {b.content} |\n"
        )
        offset += b.size
    return "".join(rows)


def _layout_rows(lay: layout.Layout) -> str:
    rows = []
    for b in lay.blocks:
        size = f"{b.repeat} x {b.width}" if b.repeat > 1 else str(b.width)
        rows.append(f"| `{b.name}` | {size} | {lay.offsets[b.name]} | {b.description} |\n")
    return "".join(rows)


NOTES = """\
## How the estimates are made

* **Damage** (`moves[k].damage`, `threat.damage`): `poke_env.calc.calculate_damage`,
  the mean of its lowest and highest roll divided by the target's current HP, clipped to
  1; `ko` says whether the highest roll reaches that HP. Opponents' stats are unknown to
  the client, so they are estimated as random battles build them: 85 EVs and 31 IVs in
  every stat, a neutral nature, the level Showdown shows. They are set on the Pokémon
  only while the calculator runs. Crits, accuracy and multi-hit variance are left to the
  other features (accuracy, type, category).
* **Caching**: the calculator costs ~0.2 ms a call, so results are cached under a key of
  everything it reads for the two actives (species, stats, types/Tera, item, ability,
  status, relevant volatile effects, weather, terrains, screens, HP thresholds of
  HP-sensitive abilities); boosts are factored out (the calculator runs unboosted and the
  result is scaled by the attacking/defending stat multipliers, honouring Unaware, Body
  Press, Foul Play, Psyshock-like and boost-ignoring moves). Moves whose power depends on
  HP or boosts keep those in their key. A new matchup costs one calculator call per
  damaging move plus the threat's candidates; a repeated one costs dictionary look-ups.
* **Threat**: the opponent's active's damaging moves: those revealed, plus (while fewer
  than four are revealed) the movepool of its random-battle sets from the pinned
  `pokemon-showdown` package (`data/random-battles/gen*/sets.json`), else one stand-in
  move per STAB type. Candidates are ranked by a cheap score (base power x STAB x type
  multiplier x its estimated attacking stat / our defending stat); the first goes
  through the calculator, the next ones (up to `threat_calcs`, default 3) only while
  their score is within 75% of the first's or nothing so far did damage (e.g. an
  ability immunity). The most damaging one is reported.
* **Matchups** (`offense`/`defense` of every slot) use the type chart only (cheap), for
  switching decisions; the calculator covers the two actives.
* **Speed**: Speed stat (estimated for the opponent) x boost x paralysis x Choice Scarf
  (when known) x Tailwind; abilities and items other than the Scarf are ignored.
* **Items and abilities** are not embeddable in a fixed Box, so a known one is a one-hot
  over a few high-impact groups plus "other"; unknown ones are all 0 with `*_known` = 0.

### Item groups

{items}

### Ability groups

{abilities}

## Tokens of `model=attention`

`model=attention` (`mapleenv/policies/attention.py`) does not read this vector flat: it cuts
it into 17 entity tokens, each embedded by a linear map shared by tokens of its kind plus a
learned kind embedding, relates them with a small pre-LayerNorm transformer (empty
opponent and move slots, `present` = 0, are masked as keys), and feeds the pooled tokens
(context token, mean of own Pokémon, mean of opponent Pokémon) to an LSTM that carries
memory across turns. Every action is scored from the token it acts on, beside the LSTM's
output:

| token | count | built from | scores |
|---|---|---|---|
| own Pokémon *i* | 6 | `own_team[i]` (+ `own_active` if active) | switch *i* (action *i*) |
| opponent Pokémon *j* | 6 | `opponent_team[j]` (+ `opponent_active` if active) | none |
| move *k* | 4 | `moves[k]` | 6+*k*, 10+*k*, 14+*k*, 18+*k*, 22+*k* (plain/mega/z/max/Tera) |
| context | 1 | `threat`, `speed`, `field`, `battle` | the value |

With `singles_sets` the opponent tokens also add `opponent_sets[j]` (through their own linear
map) and the move tokens `move_futility[k]`; the network reads the layout its observation
size names (`layout.for_size(obs_dim)`), so `singles_entities` checkpoints load as they were.

Swapping two benched Pokémon in the observation swaps their switch logits and nothing
else (a test checks it): the network knows which action belongs to which entity.
"""


RICH2_INTRO = """
## `singles_sets`: {size} features

`encoder="singles_sets"` (`mapleenv.encoders.singles.sets.SinglesSetsEncoder`): the {rich_size}
features of `singles_entities`, unchanged and in the same places, followed by:

| block | size | offset | content |
|---|---|---|---|
"""


FUTILITY_NOTES = """
The flags judge only what our side can see, so some are approximations:

* Sleep Clause Mod counts when the battle's `|rule|` lines name it (random battles do): a
  sleep move (Spore, Sleep Powder, Hypnosis...) is futile while another opposing Pokémon
  with HP left sleeps, unless the protocol log's latest sleep line for it says
  `[from] move: Rest` (Showdown's own exception: a sleep its side caused). Yawn is not
  flagged: it still makes the target drowsy, and the sleeper may wake before Yawn ends.
* Encore fails on a target whose last move since it came in is one Encore cannot repeat
  (Encore, Sleep Talk, Struggle, Transform, Mimic, Metronome... Showdown's `failencore`)
  or has no PP left, or that has used no move yet and will not act before us: our move
  has higher priority (Prankster counts) or we are faster by the `speed` block's estimate
  (Trick Room reversed). An unseen Choice Scarf or a priority move of theirs can make
  Encore work where the flag says it fails.
* A Protect-like move (Protect, Detect, Endure, King's Shield, Spiky Shield, Baneful
  Bunker, Burning Bulwark, Obstruct, Silk Trap) right after a successful protecting move
  (Quick and Wide Guard count) is set in `user_state`, though it still works 1 time in 3
  (1 in 9 after two...): the flag marks it as most likely failing.
"""


MASK_INTRO = """
## Masking futile moves (`mask_futile`)

With the env setting `mask_futile` (`env.mask_futile=true`; `mask_futile=true` for
`trainer.evaluate` and `trainer.play`: docs/evaluation.md) the moves that **surely** fail
this turn leave `action_mask` and the env's legal actions
(`mapleenv/encoders/features/certain.py: surely_fails`, `without_futile`). It works with any
encoder: the mask is judged from the battle, and no observation changes. Off (the
default) the mask is the exact legal mask, bit for bit.

The rule: a move is masked when it fails by the game's rules in the state our side sees,
unless the opponent spends its turn changing that state (switching out, curing, breaking
our substitute, damaging us before Rest): the mask gives up those prediction plays.
What can change the outcome for free or by chance (the target terastallizing, waking or
thawing, a hidden ability, an estimated speed, Protect's 1 in 3) makes a failure only
likely: it stays a `move_futility` flag and is never masked.
"""

MASK_ROWS: tuple[tuple[str, str, str], ...] = (  # condition, masked, why
    (
        "Sleep Talk/Snore while awake; Fake Out-like past the first turn; Rest or healing"
        " at full HP; Rest asleep or with a sleep-proof ability",
        "yes",
        "our own state",
    ),
    (
        "Substitute at HP <= 1/4, Shed Tail at <= 1/2; Belly Drum at <= 1/2 or +6; boosts"
        " already +6",
        "yes",
        "our own state",
    ),
    (
        "hazard at max layers; screen, weather or terrain already up; Aurora Veil without snow",
        "yes",
        "the field as it is",
    ),
    (
        "Substitute while one is up",
        "no",
        "a faster foe may break it first (the slow re-sub)",
    ),
    (
        "Protect-like right after a successful one",
        "no",
        "works 1 time in 3",
    ),
    (
        "status move into a paralysed, burned or poisoned target; a volatile it already "
        "has (confusion apart); a substitute (no Infiltrator or sound); Safety Goggles vs"
        " powder; Safeguard; Strength Sap at -6",
        "yes",
        "the target's visible state",
    ),
    (
        "status move into a sleeping or frozen target; Confuse Ray into confusion",
        "no",
        "it may wake, thaw or snap out at its own move, before ours",
    ),
    (
        "sleep move under Sleep Clause Mod while a benched foe sleeps (not from Rest)",
        "yes",
        "the sleeper stays asleep on the bench",
    ),
    (
        "type immunity (Ground into Flying, Electric into Ground, Thunder Wave, "
        "powder/Leech Seed vs Grass, Prankster vs Dark), status-immune types",
        "only once the target cannot terastallize: it has, its side used its Tera, or the"
        " format has none",
        "a Tera this turn changes the types",
    ),
    (
        "type immunity of a move whose type is set in battle (Tera Blast, Weather Ball, "
        "Judgment...) or used with a type-changing ability (Pixilate, Normalize, Liquid "
        "Voice...); a target with Foresight, Miracle Eye, Smack Down, Ingrain",
        "no",
        "the move's type or the immunity may not hold",
    ),
    (
        "a revealed (or the species' only) blocking ability: Levitate, absorbing "
        "abilities, Soundproof, Good as Gold, Magic Bounce...",
        "yes, unless we have Mold Breaker-like or Neutralizing Gas, or it is Gastro Acid'd",
        "the ability is known",
    ),
    (
        "an unknown ability that may block (`ability_risk`)",
        "no",
        "hidden information",
    ),
    (
        "Encore (last move, or moving first by the speed estimate); priority into Psychic"
        " Terrain; Misty/Electric Terrain on a grounded target; Sucker Punch",
        "no",
        "speed estimates, Tera, unknown items or abilities decide",
    ),
)

MASK_OUTRO = """
Only plain and Tera orders of such a move are masked (Mega, Z-Move and Dynamax change the
move). If every legal action would be masked (no switch left), the plain legal mask is
kept: the game always gets a choice.

In double battles (`without_futile_doubles`) each slot's move is judged against the
Pokémon its target would hit: the chosen foe (the other one when its slot is empty:
Showdown retargets the move), both foes for a spread or random-foe move (masked only when
it fails against both), and by our own state alone for a move aimed at our side or one that
also hits our ally (the ally may terastallize first). A joint action is masked when either
slot's half is; a slot whose every order would go keeps them all.
"""


def _feature_table(title: str, block: layout.Block) -> str:
    rows = [f"\n## {title} (width {block.width})\n\n| feature | size | range | scaling |\n"]
    rows.append("|---|---|---|---|\n")
    for f in block.features:
        rows.append(f"| `{f.name}` | {f.size} | [{f.low:g}, {f.high:g}] | {f.scaling} |\n")
    return "".join(rows)


def _mask_section() -> str:
    """The ``mask_futile`` rule and its certain-vs-likely table."""
    rows = "".join(f"| {c} | {m} | {w} |\n" for c, m, w in MASK_ROWS)
    return f"{MASK_INTRO}\n| condition | masked | why |\n|---|---|---|\n{rows}{MASK_OUTRO}"


def _rich2() -> str:
    lay = layout.SINGLES_SETS
    parts = [RICH2_INTRO.format(size=lay.size, rich_size=layout.SIZE)]
    for block in layout.SETS_BLOCKS:
        parts.append(
            f"| `{block.name}` | {block.repeat} x {block.width} | {lay.offsets[block.name]} "
            f"| {block.description} |\n"
        )
    parts.append(f"| **total** | **{lay.size}** | | |\n")
    for b in layout.SETS_BLOCKS:
        parts.append(_feature_table(f"`{b.name}`", b))
        if b.name == "move_futility":
            parts.append(FUTILITY_NOTES)
            parts.append(_mask_section())
    return "".join(parts)


def _groups(groups: dict[str, frozenset[str]], extra: dict[str, str]) -> str:
    lines = ["| group | ids |", "|---|---|"]
    for name, ids in groups.items():
        lines.append(f"| {name} | {extra.get(name) or ', '.join(sorted(ids))} |")
    lines.append("| other | any other known id |")
    return "\n".join(lines)


def render() -> str:
    """The full text of ``docs/observation.md``."""
    parts = [
        INTRO.format(
            size=layout.SIZE,
            simple_size=simple.SinglesBasicEncoder().size,
            simple_rows=_simple_rows(),
            doubles_size=doubles.DoublesBasicEncoder().size,
            doubles_rows=_simple_rows(doubles.BLOCKS),
            doubles2_size=doubles_calc.DoublesCalcEncoder().size,
            doubles2_rows=_simple_rows(doubles_calc.BLOCKS),
            doubles3_size=doubles_entities.LAYOUT.size,
            doubles3_rows=_layout_rows(doubles_entities.LAYOUT),
            doubles3_move_width=doubles_entities.LAYOUT.block("moves").width,
        )
    ]
    for block in layout.LAYOUT:
        size = f"{block.repeat} x {block.width}" if block.repeat > 1 else str(block.width)
        parts.append(
            f"| `{block.name}` | {size} | {layout.OFFSETS[block.name]} | {block.description} |\n"
        )
    parts.append(f"| **total** | **{layout.SIZE}** | | |\n")
    seen: set[int] = set()
    for block in layout.LAYOUT:
        if id(block.features) in seen:
            continue
        seen.add(id(block.features))
        users = [b.name for b in layout.LAYOUT if b.features is block.features]
        parts.append(
            f"\n## {' / '.join(f'`{u}`' for u in users)} (width {block.width})\n\n"
            "| feature | size | range | scaling |\n|---|---|---|---|\n"
        )
        for f in block.features:
            parts.append(f"| `{f.name}` | {f.size} | [{f.low:g}, {f.high:g}] | {f.scaling} |\n")
    parts.append(_rich2())
    parts.append(
        "\n"
        + NOTES.format(
            items=_groups(vocab.ITEM_GROUPS, {"berry": "any id ending in `berry`"}),
            abilities=_groups(vocab.ABILITY_GROUPS, {}),
        )
    )
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check``, verify) ``docs/observation.md``."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    parser.add_argument(
        "--path", type=Path, default=DOC_PATH, help="the page to write (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.path.read_text() if args.path.exists() else ""
        if current != text:
            print(
                f"{args.path} is stale; run `python scripts/docs/render_observation.py`",
                file=sys.stderr,
            )
            return 1
        return 0
    args.path.parent.mkdir(parents=True, exist_ok=True)
    args.path.write_text(text)
    print(f"wrote {args.path} ({layout.SIZE} features)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
