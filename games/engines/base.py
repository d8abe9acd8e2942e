"""What every game engine offers. Engines are pure Python: no Django, no clock, no global random.

A game state is a JSON-serialisable dict, opaque to everything but its engine. It holds the seed
and the random stream's position, so it must never be shown to anyone as it is: `view()` says
what one viewer may see.

An engine is a module with these names (see `Engine`). A move is a JSON dict. Two moves are
made by the site, never by a player: `{"timeout": true}` when a seat runs out of time and
`{"resign": true}` when it gives up; every engine accepts both from a seat that is still in play.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

JSON = dict[str, Any]


class IllegalMove(Exception):
    """A move the rules refuse. `str(exc)` is a sentence for the player."""


@dataclass(frozen=True)
class Result:
    reason: str  # how it ended: "exit", "damage", "timeout", "resign", ...
    places: list[int]  # places[seat]: 1 is the winner, equal places share


class Engine(Protocol):
    SLUG: str  # "cornmaze", "robotmaze", "mazerace"
    TITLE: str  # "Corn maze"
    MIN_SEATS: int
    MAX_SEATS: int
    # Optional names an engine may define:
    #   INITIAL_IS_PUBLIC = True: the record shows `initial` while the game runs.
    #   SEATS_MOVE_APART = True: a seat's move does not depend on the others' (a race): each
    #   seat counts its own moves, and the engine says how many with
    #   move_number(state, seat) -> int: the seat's own moves so far (a runner's steps), which
    #   its next move carries so that the same move posted twice counts once. Without it
    #   (games by turns) the game's ply does that.
    #   record_move(move, outcome, seat, viewer, over) -> (move, outcome) | None: what one
    #   viewer of the record may see of a move (None: nothing); without it, all is public.
    #   play_started(state) -> bool: whether a real move has been made (set-up moves are not
    #   one); a game timed out before that is aborted. Without it: any move counts.
    #   replay_move(move, outcome) -> move: the move to apply when a record is replayed, from
    #   what the record shows of it (a live race step: its landing time as `now_ms`).
    #   deadline_ms(state) and close(state, now_ms): a game the site ends at a deadline with no
    #   move (a live race); a record that says it finished is closed at its deadline.

    def default_options(self) -> JSON: ...

    def validate_options(self, options: JSON, seats: int) -> JSON:
        """Checked, normalised options; raises ValueError with a message for the player."""
        ...

    def start(self, seed: bytes, options: JSON, seats: int) -> JSON:
        """The state before the first move."""
        ...

    def initial(self, state: JSON) -> JSON:
        """The record's `initial` (the full one: the site hides it while a game runs)."""
        ...

    def first_seat(self, state: JSON) -> int: ...

    def to_move(self, state: JSON) -> list[int]:
        """The seats that may act now (empty once the game is over)."""
        ...

    def apply(self, state: JSON, seat: int, move: JSON) -> tuple[JSON, JSON]:
        """(new state, outcome) or IllegalMove. The given state is not changed."""
        ...

    def view(self, state: JSON, seat: int | None) -> JSON:
        """Exactly what this seat (None: a spectator) may see, JSON-serialisable."""
        ...

    def result(self, state: JSON) -> Result | None: ...

    def notation(self, move: JSON, outcome: JSON) -> str:
        """The move as the log shows it, such as `c e`."""
        ...
