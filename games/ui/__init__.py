"""What the site's pages need to know of each game, beyond its engine: the form that creates
one, how a move arrives from a form, and what its board template draws. One module per game;
the views stay the same for all of them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Protocol

from django import forms
from django.http import QueryDict

from ..engines import is_race
from ..engines.base import JSON

# Seats are painted through a data-colour attribute (0 to 5; static/css/site.css), never a
# style attribute, which the Content-Security-Policy refuses.
SEAT_COLOURS = 6


class MoveInputError(Exception):
    """A move form that cannot be read. `str(exc)` is a sentence for the player."""


class CreateForm(forms.Form):
    """A game's creation form: `create_args()` gives what `services.game_create` takes."""

    def create_args(self) -> tuple[JSON, str, list[str]]:
        """(options, clock, bot level per seat with "" for a person); seat 0 is the creator's."""
        raise NotImplementedError


class GameUI(Protocol):
    slug: str
    create_form: type[CreateForm]
    board_template: str  # draws context["board"]
    move_template: str  # the move form, shown to a seat that may act

    def board(self, view: JSON, viewer: int | None, draft: JSON | None = None) -> dict[str, Any]:
        """Template context for the board, from the engine's view for this viewer only and
        the viewer's own draft (see `draft_update`)."""
        ...

    def parse_move(self, data: QueryDict, view: JSON) -> JSON:
        """The engine move in a posted form, or MoveInputError."""
        ...

    def draft_update(self, data: QueryDict, view: JSON, draft: JSON | None) -> JSON:
        """A change to the move form that is not a move yet (a crate placed during set-up, a
        program to preview), kept in the viewer's session so that a refresh keeps it."""
        ...

    # Optional, used by the game page when a UI has them (Maze Race does):
    #   move_number_field: the name of the move form's field that carries the move number
    #   (services.move_number); "ply" without it, "step" in a race.
    #   page_context(game, view, viewer, now) -> dict: more context for the game page, such
    #   as `poll_every` ("500ms"), `status_template` (drawn as the status line),
    #   `hide_resign`, `aborted_text`.
    #   hide_log = True: the page shows no move log.


def out_of_time(kind: str, seats: int) -> str:
    """What becomes of a seat whose clock runs out, as the game page and the mails say it."""
    if is_race(kind):
        return "A runner still in the maze then is out where it stands."
    if seats > 2:
        return "A player who runs out of time is dropped from the game."
    return "A player who runs out of time loses."


def clock_rule(kind: str, seats: int, duration: timedelta | None) -> str:
    """The game page's line under the players: what the clock gives and what running out
    costs ("" for a live race, which has no days on its clock)."""
    if duration is None:
        return ""
    given = "from the start to get out" if is_race(kind) else "for each move"
    return f"{duration.days} days {given}. {out_of_time(kind, seats)}"


def move_number_field(ui: GameUI) -> str:
    """The move form's field that carries the move number (see GameUI)."""
    return str(getattr(ui, "move_number_field", "ply"))


def colour(seat: int) -> int:
    """A seat's colour, as its dot, marker, runner, robot and path carry it in data-colour."""
    return seat % SEAT_COLOURS


def get_ui(slug: str) -> GameUI:
    from . import cornmaze, mazerace, robotmaze

    uis: dict[str, GameUI] = {
        "cornmaze": cornmaze.UI(),
        "robotmaze": robotmaze.UI(),
        "mazerace": mazerace.UI(),
    }
    return uis[slug]


def has_ui(slug: str) -> bool:
    try:
        get_ui(slug)
    except KeyError:
        return False
    return True
