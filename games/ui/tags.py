"""The site's own template filters, built into every template (settings.TEMPLATES): a seat's
mark, a time in the one format of the site, a game's clock in words."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import template
from django.template.defaulttags import CsrfTokenNode
from django.urls import reverse
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString

from games.ui import mark_html, time_html
from games.ui.seat_list import seat_list_html
from games.ui.wording import clock_words

register = template.Library()


@register.filter
def mark(colour: int) -> SafeString:
    return mark_html(colour)


@register.filter
def when(at: datetime | None) -> SafeString | str:
    return time_html(at) if at is not None else ""


@register.filter
def clock_in_words(game: object) -> str:
    return clock_words(game.kind, game.clock_duration)  # type: ignore[attr-defined]


@register.simple_tag(takes_context=True)
def seat_list(context: template.Context, seats: list[Any], game: Any) -> SafeString:
    """The game page's seats (games/ui/seat_list.py draws them), with the CSRF token as
    Django's own tag writes it in the forms that give time."""
    can_give = any(row["can_give"] for row in seats)
    return seat_list_html(
        seats,
        give_url=escape(reverse("game_give_time", args=[game.pk])) if can_give else "",
        csrf_input=CsrfTokenNode().render(context) if can_give else "",
    )


@register.simple_tag
def cornmaze_board(board: dict[str, Any], seats: list[Any]) -> SafeString:
    """A Corn maze board (games/ui/cornmaze.py draws it)."""
    from games.ui.cornmaze import board_html

    return board_html(board, lambda index: seat_name(seats, index))


@register.simple_tag
def cornmaze_column_choices(board: dict[str, Any], shift: str) -> SafeString:
    """A Corn maze move form's choices of one shift (games/ui/cornmaze.py draws them)."""
    from games.ui.cornmaze import column_choices_html

    return column_choices_html(board, shift)


@register.simple_tag
def robotmaze_board(board: dict[str, Any], seats: list[Any]) -> SafeString:
    """A Robot Maze Race board (games/ui/robotmaze.py draws it)."""
    from games.ui.robotmaze import board_html

    return board_html(
        board, lambda index: seat_name(seats, index), lambda index: seat_link(seats, index)
    )


@register.simple_tag
def robotmaze_editor_grid(editor: dict[str, Any], draft_url: str) -> SafeString:
    """A Robot Maze Race warehouse being set up, each cell a button posted to `draft_url`
    (games/ui/robotmaze.py draws it)."""
    from games.ui.robotmaze import grid_html

    return grid_html(
        editor["rows"], kind="editor", caption="editor-title", robot_name="", draft_url=draft_url
    )


@register.simple_tag
def robotmaze_commands(program: dict[str, Any]) -> SafeString:
    """A Robot Maze Race program form's command choices (games/ui/robotmaze.py draws them)."""
    from games.ui.robotmaze import command_choices_html

    return command_choices_html(program)


@register.simple_tag
def robotmaze_runs(program: dict[str, Any]) -> SafeString:
    """A Robot Maze Race program form's choices of runs (games/ui/robotmaze.py draws them)."""
    from games.ui.robotmaze import run_choices_html

    return run_choices_html(program)


@register.filter
def seat_link(seats: list[Any], index: int) -> SafeString:
    """The name of seat `index` in a page's seat rows, linked to the player's page (the row's
    `url`); a bot's or an open seat's name as text."""
    for row in seats:
        seat = row["seat"]
        if seat.index == index:
            url = row.get("url")
            if url:
                return format_html('<a href="{}">{}</a>', url, seat.name)
            return format_html("{}", seat.name)
    return format_html("Seat {}", index + 1)


@register.filter
def seat_name(seats: list[Any], index: int) -> str:
    """The name of seat `index` in a page's seat rows (each a dict with its `seat`)."""
    for row in seats:
        seat = row["seat"]
        if seat.index == index:
            return str(seat.name)
    return f"Seat {index + 1}"
