"""The one small interface between the play core and a game's pace: how its moves are timed.
Most games go "by turns" (games/play/paces/turns.py, the pace of any game no other pace
claims); a live race runs on a clock of its own (games/play/paces/race.py). Each pace module
registers itself here when it is imported (the app's `ready`), the way bots do; the core asks
`pace_for(game)` and never which game or pace it runs, and imports no pace.

Every method is called inside the core's transaction, with the game's lock held."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime

from games.engines.base import JSON
from games.models import Game


class Pace:
    """A pace: how the core starts a game, takes a move, what follows a move, and what is due
    when no move comes. The defaults do nothing; a pace changes what it needs."""

    name: str = ""
    # A bot's move is a task queued when its turn starts (`after_commit`); else the pace moves
    # its bots itself.
    bots_by_turn: bool = True
    # A game of this pace that a timeout ends may be ended with the sweep's whole batch: no
    # `moved` of its own follows its last move.
    ends_in_batch: bool = True

    def claims(self, game: Game) -> bool:
        """Whether this pace times `game`."""
        return False

    def started(self, game: Game) -> None:
        """The game has just started."""

    def stamped(self, game: Game, move: JSON, *, now: datetime, at_ms: int | None) -> JSON:
        """The move as the engine takes it (a race step gets its time), or MoveRefused."""
        return move

    def moved(self, game: Game) -> None:
        """A move was applied to `game`, which the caller saves next."""

    def after_commit(self, game: Game) -> None:
        """Queue what follows the change once it commits (games/queueing.py)."""

    def sweep(self, *, now: datetime, limit: int) -> int:
        """For the beat's sweep: end what has fallen due with no move (a race's deadline), each
        game under its own lock, taken here. Returns how many games it acted on."""
        return 0


_PACES: list[Pace] = []
_DEFAULT: list[Pace] = []


def register(pace: Pace, *, default: bool = False) -> Pace:
    """Called by each pace module when it is imported; `default`: the pace of every game no
    other pace claims (by turns)."""
    if default:
        _DEFAULT[:] = [pace]
    elif all(p.name != pace.name for p in _PACES):
        _PACES.append(pace)
    return pace


def pace_for(game: Game) -> Pace:
    for pace in _PACES:
        if pace.claims(game):
            return pace
    if not _DEFAULT:
        raise LookupError("No pace is registered: the games app loads them when it is ready.")
    return _DEFAULT[0]


def paces() -> list[Pace]:
    return [*_PACES, *_DEFAULT]


# --- bots driven by their caller ---------------------------------------------------------------

_queue_bot_turns: ContextVar[bool] = ContextVar("queue_bot_turns", default=True)


@contextmanager
def bot_tasks_paused() -> Iterator[None]:
    """For callers that drive bots themselves (selfplay): no bot turn is queued meanwhile."""
    token = _queue_bot_turns.set(False)
    try:
        yield
    finally:
        _queue_bot_turns.reset(token)


def bot_tasks_queued() -> bool:
    return _queue_bot_turns.get()
