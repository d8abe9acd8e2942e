"""Every sentence that more than one place says: the game pages, the archive, the replays, the
mails and the feeds take their words from here, so that they agree ("the winner reached the
exit" everywhere). Pure words: this module imports the engines (to know a race, whose seats
step on their own, from a game by turns) and nothing else of the site."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from games.engines import get_engine
from games.models import Game


def steps_apart(kind: str) -> bool:
    """Whether the game's seats step on their own, with no turns (a race): its words say
    "step" and "get out" where a game by turns says "move"."""
    return get_engine(kind).SEATS_MOVE_APART


# --- how a game ended ------------------------------------------------------------------------

# From Game.result_reason, as the archive, the replay and the feeds say it. Engines may add
# reasons; an unknown one is shown as it is.
ENDINGS = {
    # Said after a player's place too ("you came 3rd · a robot broke down"): never as if it
    # were that player's own doing.
    "damage": "a robot broke down",
    "timeout": "out of time",
    "resign": "resignation",
    "deadline": "race time ran out",
    "aborted": "aborted, no result",
    # Called off by a player (play.challenges).
    "player_aborted": "aborted by a player, no result",
    "withdrawn": "withdrawn, no result",
    "declined": "declined, no result",
    "expired": "challenge expired, no result",
}


SET_UP_UNFINISHED_ENDING = "set-up not finished, no result"


def ending(reason: str, *, ply: int = 0, kind: str = "") -> str:
    """`ply`: the game's moves. A game aborted by its clock with moves made is a Robot Maze
    Race whose set-up did not finish (set-up moves do not start the play)."""
    if reason == "aborted" and ply:
        return SET_UP_UNFINISHED_ENDING
    if reason == "exit":
        return winner_out(kind)
    return ENDINGS.get(reason, reason.replace("_", " ") or "unknown")


# After who won, on the game page: "alice wins (the others resigned)".
RESULT_TEXT = {
    "timeout": "the others ran out of time",
    "resign": "the others resigned",
    "damage": "the other robot broke down",
    "deadline": "nobody got out: placed by cells covered",
}
# With one loser, the page names it.
LOSER_TEXT = {
    "timeout": "{} ran out of time",
    "resign": "{} resigned",
    "damage": "{}'s robot broke down",
}


def result_text(reason: str, losers: Sequence[str], kind: str = "") -> str:
    """How a finished game ended, after who won, given the names of those who lost."""
    if len(losers) == 1 and reason in LOSER_TEXT:
        return LOSER_TEXT[reason].format(losers[0])
    if reason == "exit":
        return reached(kind)
    return RESULT_TEXT.get(reason, reason)


def reached(kind: str) -> str:
    """What a winner by "exit" did: a Corn maze has its right edge, the others an exit."""
    return "reached the right edge" if kind == "cornmaze" else "reached the exit"


def ran_out(name: str) -> str:
    return f"{name} ran out of time"


def resigned(name: str) -> str:
    return f"{name} resigned"


def departed(name: str, how: str) -> str:
    """A seat's leaving move: `how` is "resign" or "timeout" (Game.departures)."""
    return resigned(name) if how == "resign" else ran_out(name)


def departures_text(left: Sequence[tuple[str, str]]) -> str:
    """Who left and how, in order: "bob resigned and carol ran out of time"."""
    return listed([departed(name, how) for name, how in left])


def listed(parts: Sequence[str]) -> str:
    """Parts in a sentence: "bob", "bob and carol", "bob, carol and dave"."""
    return " and ".join([", ".join(parts[:-1]), parts[-1]] if len(parts) > 1 else parts)


def winner_out(kind: str) -> str:
    """How a game ended when its winner got there: a "game over" mail's how, after who won, and
    the archive's."""
    return f"the winner {reached(kind)}"


# How each runner of a race left the maze (the race's results).
HOW_OUT = {"exit": "got out", "resign": "resigned", "timeout": "ran out of time"}
STILL_IN = "still in the maze at the end"


def how_out(out: str | None) -> str:
    return HOW_OUT.get(out or "", STILL_IN)


# --- clocks and what they cost ---------------------------------------------------------------


def out_of_time(kind: str, seats: int) -> str:
    """What becomes of a seat whose clock runs out, as the game page and the mails say it."""
    if steps_apart(kind):
        return "A runner still in the maze then is out where it stands."
    if seats > 2:
        return "A player who runs out of time is dropped from the game."
    return "A player who runs out of time loses."


def resign_costs(kind: str, others: list[str]) -> str:
    """What resigning does to the player who asks, given the names of the other seats."""
    if steps_apart(kind):
        return "You are out where you stand, placed by the cells you covered."
    if len(others) > 1:
        return "You leave the game: your marker leaves the board and the others play on."
    return f"You lose the game: {others[0]} wins."


def clock_rule(kind: str, seats: int, duration: timedelta | None, *, over: bool = False) -> str:
    """The game page's line under the players: what the clock gives and, while the game runs,
    what running out costs ("" for a live race, which has no days on its clock)."""
    if duration is None:
        return ""
    given = "from the start to get out" if steps_apart(kind) else "for each move"
    if over:
        return f"{duration.days} days {given}."
    return f"{duration.days} days {given}. {out_of_time_rule(kind, seats)}"


def out_of_time_rule(kind: str, seats: int) -> str:
    """What running out of a clock of days costs, with the vacation that comes first: the game
    page's words, which the your-turn and reminder mails and the calendar's events repeat."""
    return f"{out_of_time(kind, seats)} {VACATION_FIRST}"


# Automatic vacation (play.vacations) comes before a timeout, in every clock of days, once play
# has begun (before, the game is aborted: play.core.seats_time_out).
VACATION_FIRST = (
    "Once play has begun, a registered player with vacation days left goes on vacation "
    "instead, unless they turned automatic vacation off."
)


def clock_options_rule(options: dict[str, object], kind: str) -> str:
    """What a game's clock options add to its clock rule ("" for the plain clock)."""
    parts = []
    bank = options.get("bank_days")
    if bank and steps_apart(kind):
        # A slow race has one clock for the whole race: the bank adds to it once.
        parts.append(f"Each runner has a time bank of {bank} days, added once to the race's clock.")
    elif bank:
        parts.append(
            f"Each player has a time bank of {bank} days, spent only when a move takes longer"
            f" than its time; each move adds a day back, up to {bank} days."
        )
    if options.get("weekends_off"):
        parts.append(
            "Weekends off: clocks stop on Saturdays and Sundays, in each player's own time zone."
        )
    return " ".join(parts)


def clock_event_text(event: dict[str, object], names: dict[int, str]) -> str:
    """A line of the game's log for one of its clock events (Game.clock_events)."""
    seat = names.get(event.get("seat"), "a player")  # type: ignore[call-overload]
    if event.get("kind") == "gift":
        by = names.get(event.get("by"), "a player")  # type: ignore[call-overload]
        return f"{by} gave {seat} one more day."
    return f"{seat}'s clock changed ({event.get('kind')})."


def clock_words(kind: str, duration: timedelta | None) -> str:
    """A game's clock as the lobby says it: `3 days per move`, `slow race: 30 days to get
    out`, `live race`."""
    if duration is None:
        return "live race"
    days = f"{duration.days} day{'s' if duration.days != 1 else ''}"
    if steps_apart(kind):
        return f"slow race: {days} to get out"
    return f"{days} per move"


def settings_words(game: Game) -> str:
    """A game's settings as a mail names them: "8×8 board, 3 days per move, a time bank of 7
    days, weekends off, rated"."""
    parts = []
    size = game.options.get("size")
    if size:
        parts.append(f"{size}×{size} board")
    parts.append(clock_words(game.kind, game.clock_duration))
    bank = game.clock_options.get("bank_days")
    if bank:
        parts.append(f"a time bank of {bank} days")
    if game.clock_options.get("weekends_off"):
        parts.append("weekends off")
    parts.append("rated" if game.rated else "not rated")
    return ", ".join(parts)


# --- the replay ------------------------------------------------------------------------------

START_APART = "The start. There are no turns: each runner steps on its own."


# --- ratings (games/archive/ratings.py) ---------------------------------------------------------

RATED_HELP = (
    "A rated game changes its players' ratings. Games with a guest are never rated; "
    "bots have ratings too."
)
RATED_GAME = "Rated game."
UNRATED_GAME = "Not rated."
ABORTED_GAME = "Not rated: a game with no result changes nobody's results."


def rated_text(game: Game) -> str:
    """Whether the game's end changes ratings, as its page says it."""
    if game.status == Game.Status.ABORTED:
        return ABORTED_GAME
    return RATED_GAME if game.rated else UNRATED_GAME


RATING_EXPLAINED = (
    "A rating is a careful guess at how well someone plays: it starts at 1000 and rises as "
    "the site learns more. The ± is how unsure the guess still is."
)


def rating_change_text(before: int, after: int) -> str:
    """ "+12", "−5" (a minus sign), "±0": a rating's change at a game's end."""
    diff = after - before
    if diff > 0:
        return f"+{diff}"
    if diff < 0:
        return f"\u2212{-diff}"
    return "\u00b10"


# --- challenges, invites, rematches (play.challenges) ---------------------------------------

# The status line of a game that was called off before it started, or aborted by a player.
CALLED_OFF_TEXT = {
    "withdrawn": "Withdrawn by its creator before it started. No result.",
    "declined": "Declined: a challenged player said no, so the game will not start. No result.",
    "expired": "Expired: not every challenged player accepted in time. No result.",
    "player_aborted": "Aborted by a player before anyone else moved. No result.",
}
# What calling off a game that never started does (declining a challenge, withdrawing a game):
# the pages that ask first say it, and the mails about a decline.
CALL_OFF_COSTS = "The game is off for everyone: it will not start, and nobody has a result."
# What aborting a game nobody else has moved in does: the page that asks first says it.
ABORT_COSTS = "The game ends at once, aborted: nobody wins or loses, and nobody has a result."
NOBODY_MOVED_TEXT = "Aborted: nobody moved before the first deadline. No result."
NOT_READY_TEXT = "Aborted: not every runner pressed Ready in time. No result."
SET_UP_UNFINISHED_TEXT = "Aborted: the set-up did not finish in time. No result."


def aborted_text(reason: str, *, live_race: bool, ply: int) -> str:
    """The status line of an aborted game, on its page and its replay: called off, or run out
    of time before it began (a live race: its runners' Ready; with moves made, a Robot Maze
    Race's set-up, whose moves do not start the play)."""
    if reason in CALLED_OFF_TEXT:
        return CALLED_OFF_TEXT[reason]
    if live_race:
        return NOT_READY_TEXT
    return SET_UP_UNFINISHED_TEXT if ply else NOBODY_MOVED_TEXT


# --- the chat (games/chat, the game page) -------------------------------------------------------

CHAT_REPORTED = "Thank you: the message is reported, and the site's staff will read it."
CHAT_UNMUTED = "You see their messages again."


def chat_muted(name: str) -> str:
    return f"You will not see messages from {name} any more, in any game."
