"""What the site's pages need to know of each game, beyond its engine: the form that creates
one, how a move arrives from a form, and what its board template draws. One module per game;
the views stay the same for all of them."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from django import forms
from django.http import QueryDict
from django.utils.html import format_html
from django.utils.safestring import SafeString

from games.engines.base import JSON
from games.ui import wording

if TYPE_CHECKING:
    from games.models import Game

# Seats are painted through a data-colour attribute (0 to 5; static/css/site.css, the
# Okabe-Ito colours, told apart in the common colour blindnesses), never a style attribute,
# which the Content-Security-Policy refuses. Each seat has a shape too, so that no marker is
# told from another by its colour alone.
SEAT_COLOURS = 6


def _polygon(corners: int, radius: float, inner: float = 0.0, turn: float = 0.0) -> str:
    """An SVG path of a regular polygon (a star with `inner`) centred on 0,0, a corner up."""
    points = []
    for i in range(corners * (2 if inner else 1)):
        r = inner if inner and i % 2 else radius
        angle = math.pi * (2 * i / (corners * (2 if inner else 1)) - 0.5 + turn)
        points.append(f"{r * math.cos(angle):.1f} {r * math.sin(angle):.1f}")
    return "M" + "L".join(points) + "Z"


@dataclass(frozen=True)
class Mark:
    """A seat's shape, as an SVG path about 20 units across, centred on 0,0."""

    name: str
    path: str


MARKS = [
    Mark("circle", "M-9 0a9 9 0 1 0 18 0a9 9 0 1 0-18 0Z"),
    Mark("square", "M-8 -8h16v16h-16Z"),
    Mark("triangle", "M0 -11L10 7H-10Z"),
    Mark("diamond", "M0 -10.5L10.5 0L0 10.5L-10.5 0Z"),
    Mark("star", _polygon(5, 11, inner=4.6)),
    Mark("hexagon", _polygon(6, 9.8, turn=1 / 6)),
]


class MoveInputError(Exception):
    """A move form that cannot be read. `str(exc)` is a sentence for the player; `shown`, if
    given, the form as the player filled it in, as a draft to draw the refusal with (never
    kept): the page then shows what was chosen, not the last draft that could be read."""

    def __init__(self, message: str, *, shown: JSON | None = None) -> None:
        super().__init__(message)
        self.shown = shown


class CreateForm(forms.Form):
    """A game's creation form: `create_args()` gives what `play.core.game_create` takes, and
    `clock_options()` the clock's options, which every game's form has (a live race refuses
    them: play.core.clock_options_checked); `rated` whether the game may change ratings (drawn
    by the template after the other fields)."""

    bank = forms.ChoiceField(
        choices=[("0", "no time bank"), ("7", "7 days"), ("14", "14 days")],
        initial="0",
        required=False,
        label="Time bank",
        help_text="Spent only when a move takes longer than its time; each move adds a day back.",
    )
    weekends_off = forms.BooleanField(
        required=False,
        label="Weekends off",
        help_text="Clocks stop on Saturdays and Sundays, in each player's own time zone.",
    )
    rated = forms.BooleanField(
        required=False,
        initial=True,
        label="Rated game",
        help_text=wording.RATED_HELP,
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in ("bank", "weekends_off"):  # after the game's own fields and its clock
            self.fields[name] = self.fields.pop(name)

    def clock_options(self) -> JSON:
        """The clock options chosen: {"bank_days": 7, "weekends_off": True}; {} for neither."""
        options: JSON = {}
        bank = int(self.cleaned_data.get("bank") or "0")
        if bank:
            options["bank_days"] = bank
        if self.cleaned_data.get("weekends_off"):
            options["weekends_off"] = True
        return options

    # Every game's form: challenge named players to the seats for people, and make the game
    # private, joined through an invite link (play.challenges).
    challenge = forms.CharField(
        required=False,
        max_length=200,
        label="Challenge players",
        help_text="Their names, separated by commas. Each gets a seat for a person, kept for them.",
    )
    invite = forms.BooleanField(
        required=False,
        label="Private game with an invite link",
        help_text="Not listed in the open games: send the link to friends, who join as guests.",
    )

    def create_args(self) -> tuple[JSON, str, list[str]]:
        """(options, clock, bot level per seat with "" for a person); seat 0 is the creator's."""
        raise NotImplementedError

    def challenge_args(self) -> tuple[list[str], bool]:
        """(the names challenged, whether the game is private)."""
        names = [n.strip() for n in self.cleaned_data.get("challenge", "").split(",")]
        return [n for n in names if n], bool(self.cleaned_data.get("invite"))


class GameUI:
    """A game's pages, beyond its engine. Each game's module subclasses this (`UI`); the
    optional parts have their defaults here, so that the game page never asks whether a UI
    has them."""

    slug: str
    create_form: type[CreateForm]
    board_template: str  # draws context["board"]
    # What stands under the board on a wide screen but comes after the move form in the page (a
    # race's strip of runners): a phone shows it there, under the move form, and the Tab key
    # and a screen reader take it in that order on any screen.
    board_foot_template: str = ""
    move_template: str  # the move form, shown to a seat that may act
    # The move form's field that carries the move number (play.core.move_number).
    move_number_field: str = "ply"
    # The game page shows no move log (a race is hundreds of steps; the record has them).
    hide_log: bool = False

    def board(
        self,
        view: JSON,
        viewer: int | None,
        draft: JSON | None = None,
        *,
        yours: bool = True,
        game_over: bool = False,
    ) -> dict[str, Any]:
        """Template context for the board, from the engine's view for this viewer only and
        the viewer's own draft (see `draft_update`). `yours`: the person looking is that
        viewer, so the board may say "you"; a replay from a seat's side is not. `game_over`:
        the game is over, which an aborted game's state does not say."""
        raise NotImplementedError

    def parse_move(self, data: QueryDict, view: JSON) -> JSON:
        """The engine move in a posted form, or MoveInputError."""
        raise NotImplementedError

    def draft_update(self, data: QueryDict, view: JSON, draft: JSON | None) -> JSON:
        """A change to the move form that is not a move yet (a crate placed during set-up, a
        program to preview), kept in the viewer's session so that a refresh keeps it."""
        raise NotImplementedError

    def page_context(
        self, game: Game, view: JSON | None, viewer: int | None, now: datetime
    ) -> dict[str, Any]:
        """More context for the game page, such as `poll_every` ("500ms"), `status_template`
        (drawn as the status line), `hide_resign`. None by default."""
        return {}


def move_number_field(ui: GameUI) -> str:
    """The move form's field that carries the move number (see GameUI)."""
    return ui.move_number_field


def colour(seat: int) -> int:
    """A seat's colour, as its mark, marker, runner, robot and path carry it in data-colour;
    the seat's shape is `MARKS[colour(seat)]`."""
    return seat % SEAT_COLOURS


@functools.cache
def mark_html(colour: int, size: int = 16) -> SafeString:
    """A seat's mark beside its name (in the seats, the log, the results): its shape in its
    colour, the same as its marker on the board. Hidden from screen readers, which read the
    name. Made once per colour and size: a page draws a mark for every seat, grid and log."""
    return format_html(
        '<svg class="mark" viewBox="-12 -12 24 24" width="{}" height="{}" aria-hidden="true"'
        ' data-colour="{}"><path d="{}"></path></svg>',
        size,
        size,
        colour,
        MARKS[colour % SEAT_COLOURS].path,
    )


def time_text(at: datetime) -> str:
    """A time as the site writes it before static/js/site.js puts it in the viewer's own zone
    (the same format): `Thu 3 Apr 2025, 15:31 UTC`."""
    at = at.astimezone(UTC)
    return f"{at:%a} {at.day} {at:%b %Y, %H:%M} UTC"


def time_html(at: datetime) -> SafeString:
    """A <time> that site.js shows in the viewer's zone; the UTC time stays in its title."""
    text = time_text(at)
    return format_html(
        '<time datetime="{}" title="{}">{}</time>', at.astimezone(UTC).isoformat(), text, text
    )


@functools.cache
def _uis() -> dict[str, GameUI]:
    """Each game's UI, made once: a page asks for it several times. Imported here, not at the
    top, because each game's module imports this one."""
    from games.ui import cornmaze, mazerace, robotmaze

    return {
        "cornmaze": cornmaze.UI(),
        "robotmaze": robotmaze.UI(),
        "mazerace": mazerace.UI(),
    }


def get_ui(slug: str) -> GameUI:
    return _uis()[slug]


def has_ui(slug: str) -> bool:
    try:
        get_ui(slug)
    except KeyError:
        return False
    return True
