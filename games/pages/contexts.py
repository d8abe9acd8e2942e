"""The game page's context: the seats, the board from the viewer's own view, the log, the move
form's number, the clock and the result. Built here, outside the view, from a game read with
its seats (archive.selectors.game_for_page)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils.html import format_html_join

from games import clock
from games.archive.rating_reads import game_changes
from games.archive.reads import seat_url
from games.archive.records import public_move
from games.engines import get_engine
from games.engines.base import JSON
from games.models import Game, Seat
from games.play import core, deadlines, vacations
from games.ui import SEAT_COLOURS, colour, get_ui, mark_html, wording


def game_context(
    game: Game, user: Any, *, error: str = "", draft: JSON | None = None
) -> dict[str, Any]:
    seats: list[Seat] = list(game.seats.all())
    my_seat = next((s for s in seats if user.is_authenticated and s.user_id == user.pk), None)
    viewer = my_seat.index if my_seat else None
    engine = get_engine(game.kind)
    ui = get_ui(game.kind)
    view = engine.view(game.state, viewer) if game.state is not None else None
    to_move = set(engine.to_move(game.state)) if game.state is not None else set()
    now = clock.now()
    running = game.status == Game.Status.ACTIVE and game.clock_duration is not None
    zones = deadlines.seat_zones(game, seats) if running else {}
    gifts_given = {
        e.get("by")
        for e in game.clock_events
        if e.get("kind") == core.GIFT_KIND and e.get("ply") == game.ply
    }
    can_give = running and my_seat is not None and my_seat.index not in gifts_given
    # A rated game's end: each rated seat's change (one query, only then).
    changes = game_changes(game) if game.status == Game.Status.FINISHED else {}
    seat_rows = [
        {
            "seat": s,
            "colour": colour(s.index),
            "to_move": s.index in to_move,
            "left": clock.format_left(s.deadline - now) if s.deadline else None,
            "you": s == my_seat,
            "url": seat_url(s),
            "dropped": bool(view and s.index in view.get("dropped", [])),
            **_bank_row(game, s, zones.get(s.index), now),
            "can_give": can_give and s != my_seat and s.deadline is not None and s.deadline > now,
            "rating": changes.get(s.index),
            "vacation_until": vacations.on_vacation_until(s.user if s.user_id else None, now),
        }
        for s in seats
    ]
    moves: list[dict[str, Any]] = (
        []
        if ui.hide_log
        else [
            {
                "ply": m.ply,
                "seat": m.seat,
                "colour": colour(m.seat),
                "text": engine.notation(m.move, m.outcome),
                "at": m.at,
            }
            for m in game.moves.all()
            # Only what the record shows this viewer (a race hides the other runners' steps).
            if public_move(game.kind, m.move, m.outcome, m.seat, viewer, game.is_over) is not None
        ]
    )
    marks = {c: mark_html(c) for c in range(SEAT_COLOURS)}
    names = {s.index: s.name for s in seats}
    clock_events = [
        (e.get("ply", 0), wording.clock_event_text(e, names)) for e in game.clock_events
    ]
    log = format_html_join(
        "",
        '<li value="{}">{} <span class="notation">{}</span></li>',
        ((m["ply"], marks[m["colour"]], m["text"]) for m in moves),
    )
    if clock_events and not ui.hide_log:
        # Each clock event after the move it followed, numbered as that move.
        entries: list[tuple[int, int, str, str, str]] = [
            (m["ply"], 0, marks[m["colour"]], m["text"], "") for m in moves
        ]
        entries += [(ply, 1, "", text, " clock-event") for ply, text in clock_events]
        log = format_html_join(
            "",
            '<li value="{}" class="log-entry{}">{} <span class="notation">{}</span></li>',
            ((max(1, e[0]), e[4], e[2], e[3]) for e in sorted(entries, key=lambda e: e[:2])),
        )
    can_join = game.status == Game.Status.OPEN and my_seat is None and any(s.is_open for s in seats)
    # A game's own page context (a live race: Ready, countdown, polling).
    extra = ui.page_context(game, view, viewer, now)
    return {
        "game": game,
        "title": engine.TITLE,
        "seats": seat_rows,
        "winners": [s.name for s in seats if s.place == 1],
        "movers": [s.name for s in seats if s.index in to_move],
        "my_seat": my_seat,
        "your_turn": my_seat is not None and my_seat.index in to_move,
        # What the move form carries so that the move counts once (play.core.move_number).
        "move_number": core.move_number(game, my_seat.index) if my_seat else game.ply,
        "view": view,
        "ui": ui,
        "board": ui.board(view, viewer, draft) if view is not None else None,
        "moves": moves,
        # The log drawn at once: a game of hundreds of moves shows them all.
        "log": log,
        "can_join": can_join,
        "error": error,
        "clock_text": clock.format_left(game.clock_duration) if game.clock_duration else "live",
        "clock_rule": " ".join(
            part
            for part in (
                wording.clock_rule(game.kind, len(seats), game.clock_duration),
                wording.clock_options_rule(game.clock_options),
            )
            if part
        ),
        # Shown under the seats when the game has no log (a race).
        "clock_events": [text for _, text in clock_events] if ui.hide_log else [],
        "polling": not game.is_over,
        "rated_text": wording.RATED_GAME if game.rated else wording.UNRATED_GAME,
        "result_text": wording.result_text(
            game.result_reason, [s.name for s in seats if s.place is not None and s.place != 1]
        ),
        **extra,
    }


def _bank_row(game: Game, seat: Seat, zone: Any, now: Any) -> dict[str, Any]:
    """A seat's bank as its row shows it: for a seat to move, its clock time left split in the
    move's time and the bank (the bank is spent last); else the bank it has."""
    if seat.bank is None or not game.clock_options.get("bank_days"):
        return {"bank": None}
    bank = seat.bank
    move_left = None
    if seat.deadline is not None and game.status == Game.Status.ACTIVE:
        left = max(clock.clock_between(now, seat.deadline, zone), timedelta(0))
        bank = min(bank, left)
        move_left = clock.format_left(left - bank)
    return {"bank": clock.format_left(bank), "move_left": move_left}
