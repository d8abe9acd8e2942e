"""The site's own template filters, built into every template (settings.TEMPLATES): a seat's
mark, a time in the one format of the site, a game's clock in words."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

from games.engines import is_race
from games.ui import mark_html

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


def clock_words(kind: str, duration: timedelta | None) -> str:
    """A game's clock as the lobby says it: `3 days per move`, `slow race: 30 days to get
    out`, `live race`."""
    if duration is None:
        return "live race"
    days = f"{duration.days} day{'s' if duration.days != 1 else ''}"
    if is_race(kind):
        return f"slow race: {days} to get out"
    return f"{days} per move"


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
