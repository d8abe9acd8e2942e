"""The game page's seats, one item each: the mark and name, the place or the rating change at
the end, the clock, the bank and the "give one more day" form. Drawn here rather than by a
template loop: a move's answer draws them for every move."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from html import escape
from typing import Any

from django.utils.safestring import SafeString, mark_safe

from games.ui import mark_html, time_html


def seat_list_html(rows: Sequence[dict[str, Any]], *, give_url: str, csrf_input: str) -> SafeString:
    """The items of the seats' list, from the page's seat rows (pages.contexts.game_context);
    `give_url`: where the "give one more day" form posts, with `csrf_input` in it."""
    out = []
    for row in rows:
        seat = row["seat"]
        name = escape(seat.name)
        link = f'<a href="{escape(row["url"])}">{name}</a>' if row["url"] else name
        out.append(
            f'\n    <li class="seat{" to-move" if row["to_move"] else ""}'
            f'{" dropped" if row["dropped"] else ""}">\n      {mark_html(row["colour"])}\n'
            f'      <span class="seat-name">{link}</span>{" <em>(you)</em>" if row["you"] else ""}'
            "\n      "
        )
        if row["vacation_until"]:
            when = time_html(row["vacation_until"])
            out.append(f'<span class="vacation">on vacation until {when}</span>')
        out.append("\n      ")
        if seat.place:
            out.append(f'<span class="place">place {seat.place}</span>')
        out.append("\n      ")
        if row["dropped"]:
            out.append('<span class="place">out</span>')
        out.append("\n      ")
        if row["rating"]:
            out.append(_rating_html(row["rating"]))
        out.append("\n      ")
        if row["left"]:
            out.append(_clock_html(seat.deadline, row["left"], row["stops"], row["stopped"]))
        out.append("\n      ")
        if row["bank"]:
            spent = (
                f'{row["turn_name"]}: <span class="move-left">{escape(row["move_left"])}</span>,'
                " then bank"
                if row["move_left"]
                else "Bank"
            )
            out.append(
                f'<span class="bank">{spent}: <span class="bank-left">{escape(row["bank"])}'
                "</span></span>"
            )
        out.append("\n      ")
        if row["can_give"]:
            out.append(
                f'\n        <form method="post" action="{give_url}" hx-post="{give_url}"'
                ' hx-target="#game" hx-swap="outerHTML" class="give-time">\n'
                f'          {csrf_input}<input type="hidden" name="seat" value="{seat.index}">\n'
                f'          <button type="submit" class="secondary">Give {name} one more day'
                "</button>\n        </form>\n      "
            )
        elif row["give_room"]:
            # The button's room, unseen and out of the tab order: on a phone the button has a
            # line of its own, which the board below would fill when the turn comes.
            out.append(
                '<span class="give-room" aria-hidden="true"><button type="button"'
                f' class="secondary" tabindex="-1" disabled>Give {name} one more day</button>'
                "</span>"
            )
        out.append("\n    </li>\n    ")
    return mark_safe("".join(out))  # noqa: S308 - names and texts escaped above


def _clock_html(deadline: datetime, left: str, stops: str, stopped: bool) -> str:
    """A seat's clock, which the page counts down to `deadline` (static/js/site.js), standing
    still in each of `stops` (its weekends off, JSON) and saying so while in one."""
    stops_attr = f' data-stops="{escape(stops)}"' if stops else ""
    note = ""
    if stops:
        note = (
            f' <span class="stopped"{"" if stopped else " hidden"}>(stopped for the weekend)</span>'
        )
    return (
        f'<span class="clock" data-deadline="{escape(deadline.isoformat())}"{stops_attr}>Clock:'
        f' <span class="left">{escape(left)}</span>{note}'
        f' <span class="until">(until {time_html(deadline)})</span></span>'
    )


def _rating_html(change: Any) -> str:
    """A seat's rating change at a rated game's end (archive.rating_reads.SeatChange)."""
    direction = "up" if change.up else "down" if change.after < change.before else ""
    return (
        f'<span class="rating-change">rating {change.after}'
        f' (<span class="{direction}">{escape(change.text)}</span>)</span>'
    )
