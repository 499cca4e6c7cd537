"""Move failures that depend on what happened earlier in the battle: Sleep Clause Mod,
Encore's last move, Protect-like moves used twice in a row. Pure functions of a poke-env
battle, used by :mod:`mapleenv.encoders.features.futility` (docs/observation.md).

The battle's protocol log (poke-env's ``Battle._replay_data``, also read by
``mapleenv.replays``) says why a foe sleeps; poke-env's ``Move.is_last_used`` says what a
Pokémon used last since it came in, and ``Pokemon.protect_counter`` how many protecting
moves in a row it has used.
"""

from __future__ import annotations

from poke_env.battle import AbstractBattle, Field, MoveCategory, Pokemon, Status

from mapleenv.encoders.features.profile import speeds

SLEEP_CLAUSE = "Sleep Clause Mod"
# moves whose success chance falls to 1/3 after a protecting move the turn before
# (Showdown's ``stallingMove``; Quick/Wide Guard raise the counter but are not checked)
STALLING = frozenset(
    {
        "protect",
        "detect",
        "endure",
        "kingsshield",
        "spikyshield",
        "banefulbunker",
        "burningbulwark",
        "obstruct",
        "silktrap",
    }
)
# last moves Encore cannot repeat (Showdown's ``failencore`` flag)
FAIL_ENCORE = frozenset(
    {
        "assist",
        "blazingtorque",
        "combattorque",
        "copycat",
        "dynamaxcannon",
        "encore",
        "magicaltorque",
        "mefirst",
        "metronome",
        "mimic",
        "mirrormove",
        "naturepower",
        "noxioustorque",
        "sketch",
        "sleeptalk",
        "struggle",
        "transform",
        "wickedtorque",
    }
)


def _rested(battle: AbstractBattle, ident: str) -> bool:
    """Whether the latest sleep of the Pokémon ``ident`` ("p2: Name") came from its Rest."""
    role, name = ident[:2], ident[4:]
    for event in reversed(battle._replay_data):
        if len(event) > 3 and event[1] == "-status" and event[3] == "slp":
            who = event[2]
            if who[:2] == role and who.split(": ", 1)[-1] == name:
                return "[from] move: Rest" in event[4:]
    return False


def sleep_clause_blocks(battle: AbstractBattle, skip: Pokemon | None = None) -> bool:
    """Whether Sleep Clause Mod blocks putting the opposing active to sleep now: the format
    has it (the battle's ``|rule|`` lines) and another foe with HP left sleeps from
    something other than its own Rest (Showdown's ``sleepclausemod``); ``skip``: a foe
    not counted."""
    if not any(rule.startswith(SLEEP_CLAUSE) for rule in battle.rules):
        return False
    return any(
        mon is not skip
        and mon.status is Status.SLP
        and mon.current_hp > 0
        and not _rested(battle, ident)
        for ident, mon in battle.opponent_team.items()
    )


def _moves_first(battle: AbstractBattle, me: Pokemon, opp: Pokemon, priority: int) -> bool:
    """Whether our move of ``priority`` surely acts before the opposing active's move,
    judged as the rich encoder's speed block does (estimated stats, Choice Scarf only
    once seen); a priority move of theirs is not foreseen."""
    if priority > 0:
        return True
    if priority < 0:
        return False
    mine, theirs = speeds(battle, me, opp)
    if mine <= 0 or theirs <= 0:
        return False
    return mine < theirs if Field.TRICK_ROOM in battle.fields else mine > theirs


def encore_fails(battle: AbstractBattle, me: Pokemon, opp: Pokemon, priority: int) -> bool:
    """Whether Encore fails on ``opp``: its last move (since it came in) cannot be encored
    or has no PP left, or it has used none and will not move before us this turn."""
    last = next((mv for mv in opp.moves.values() if mv.is_last_used), None)
    if last is None:
        return _moves_first(battle, me, opp, priority)
    return last.id in FAIL_ENCORE or last.current_pp <= 0


def stalling_risky(me: Pokemon, move_id: str) -> bool:
    """Whether ``move_id`` is a Protect-like move right after a successful one (succeeds
    with probability 1/3, less each further time)."""
    return move_id in STALLING and me.protect_counter > 0


def status_prevented(category: MoveCategory, status: Status | None, battle: AbstractBattle) -> bool:
    """Whether a sleep-inducing status move is stopped by Sleep Clause Mod."""
    return category is MoveCategory.STATUS and status is Status.SLP and sleep_clause_blocks(battle)
