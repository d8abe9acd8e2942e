"""The site's own template filters, built into every template (settings.TEMPLATES): a seat's
mark, a time in the one format of the site, a game's clock in words."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

from games.ui import mark_html
from games.ui.wording import clock_words

register = template.Library()


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


@register.filter
def mark(colour: int) -> SafeString:
    return mark_html(colour)


@register.filter
def when(at: datetime | None) -> SafeString | str:
    return time_html(at) if at is not None else ""


@register.filter
def clock_in_words(game: object) -> str:
    return clock_words(game.kind, game.clock_duration)  # type: ignore[attr-defined]


@register.filter
def seat_name(seats: list[Any], index: int) -> str:
    """The name of seat `index` in a page's seat rows (each a dict with its `seat`)."""
    for row in seats:
        seat = row["seat"]
        if seat.index == index:
            return str(seat.name)
    return f"Seat {index + 1}"
