"""What every game engine offers. Engines are pure Python: no Django, no clock, no global random.

A game state is a JSON-serialisable dict, opaque to everything but its engine. It holds the seed
and the random stream's position, so it must never be shown to anyone as it is: `view()` says
what one viewer may see.

An engine is a module of pure functions, gathered at its end in an `Engine` subclass (`ENGINE`),
which has a default for every optional ability. A move is a JSON dict. Two moves are made by
the site, never by a player: `{"timeout": true}` when a seat runs out of time and
`{"resign": true}` when it gives up; every engine accepts both from a seat that is still in play.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

JSON = dict[str, Any]


class IllegalMove(Exception):
    """A move the rules refuse. `str(exc)` is a sentence for the player."""


@dataclass(frozen=True)
class Result:
    reason: str  # how it ended: "exit", "damage", "timeout", "resign", ...
    places: list[int]  # places[seat]: 1 is the winner, equal places share


class Engine:
    """What the site asks of a game's rules. Each engine module gathers its functions in a
    subclass (`ENGINE` at the end of the module); the required ones raise NotImplementedError
    here, and every optional ability has its default, so that no caller asks whether an engine
    has it."""

    SLUG: str  # "cornmaze", "robotmaze", "mazerace"
    TITLE: str  # "Corn maze"
    MIN_SEATS: int
    MAX_SEATS: int
    # The record shows `initial` while the game runs (nothing in it is hidden).
    INITIAL_IS_PUBLIC: bool = False
    # A seat's move does not depend on the others' (a race): each seat counts its own moves
    # (`move_number`) and the wording says "step" where a game by turns says "move".
    SEATS_MOVE_APART: bool = False
    # `apply` gives its state and outcome as a JSONField reads them back (dicts with str keys,
    # lists, never a tuple): the core stores them as they are, not through models.json_safe
    # (about 0.1 ms of a long Robot Maze Race's move). Its engine tests check it.
    APPLY_GIVES_JSON: bool = False
    # What a player is told of a move for an earlier position (or the same move posted twice),
    # and of a move after the seat's time ran out.
    STALE_MOVE: str = (
        "That move was for an earlier position: the game has moved on since. "
        "Look at the board again."
    )
    # ... and of the same move posted again (a second tab, a retry) once it was played, in a
    # game by turns; a race's STALE_MOVE says it.
    PLAYED_ALREADY: str = (
        "You have played that move already: a move counts once. Look at the board again."
    )
    OUT_OF_TIME: str = "Your time for this move has run out."

    # --- required ---------------------------------------------------------------------------

    def default_options(self) -> JSON:
        raise NotImplementedError

    def validate_options(self, options: JSON, seats: int) -> JSON:
        """Checked, normalised options; raises ValueError with a message for the player."""
        raise NotImplementedError

    def start(self, seed: bytes, options: JSON, seats: int) -> JSON:
        """The state before the first move."""
        raise NotImplementedError

    def initial(self, state: JSON) -> JSON:
        """The record's `initial` (the full one: the site hides it while a game runs)."""
        raise NotImplementedError

    def first_seat(self, state: JSON) -> int:
        raise NotImplementedError

    def to_move(self, state: JSON) -> list[int]:
        """The seats that may act now (empty once the game is over)."""
        raise NotImplementedError

    def apply(self, state: JSON, seat: int, move: JSON) -> tuple[JSON, JSON]:
        """(new state, outcome) or IllegalMove. The given state is not changed."""
        raise NotImplementedError

    def view(self, state: JSON, seat: int | None) -> JSON:
        """Exactly what this seat (None: a spectator) may see, JSON-serialisable."""
        raise NotImplementedError

    def result(self, state: JSON) -> Result | None:
        raise NotImplementedError

    def notation(self, move: JSON, outcome: JSON) -> str:
        """The move as the log shows it, such as `c e`."""
        raise NotImplementedError

    # --- optional, with their defaults ------------------------------------------------------

    def move_number(self, state: JSON, seat: int, ply: int) -> int:
        """What a seat's next move carries so that the same move posted twice counts once: the
        game's ply in a game by turns; a race counts each runner's own steps."""
        return ply

    def record_move(
        self, move: JSON, outcome: JSON, seat: int, viewer: int | None, over: bool
    ) -> tuple[JSON, JSON] | None:
        """What one viewer of the record may see of a stored move (None: nothing). By default
        everything is public."""
        return move, outcome

    @property
    def moves_public(self) -> bool:
        """Whether every viewer sees every move alike (`record_move` is the default's), so that
        what is drawn of the moves can be one drawing for all viewers."""
        return type(self).record_move is Engine.record_move

    def replay_move(self, move: JSON, outcome: JSON) -> JSON:
        """The move to apply when a record is replayed, from what the record shows of it (a
        live race step: its landing time as `now_ms`). By default the move as shown."""
        return move

    def seats_left(self, state: JSON) -> list[int]:
        """The seats that left a game that goes on without them, by resigning or on time:
        they have no more say in it (they give no time). By default none: leaving ends it."""
        return []

    def play_started(self, state: JSON, ply: int) -> bool:
        """Whether a real move has been made (set-up moves are not one); a game timed out
        before that is aborted. By default any move counts."""
        return ply > 0

    def deadline_ms(self, state: JSON) -> int | None:
        """When the site must end the game with no move (a live race), in ms after its start;
        None: no such deadline (the default)."""
        return None

    def close(self, state: JSON, now_ms: int) -> JSON:
        """The state once closed at `now_ms` (a live race at its deadline). By default nothing
        closes a game but its moves."""
        return state

    def closed_at_deadline(self, state: JSON) -> JSON:
        """A game that the rules end at a deadline with no move, closed there: what a finished
        game's last state is when its moves did not end it. Unchanged for other games."""
        if self.result(state) is not None:
            return state
        at = self.deadline_ms(state)
        return state if at is None else self.close(state, at)
