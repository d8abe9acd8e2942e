"""The game page's context: the seats, the board from the viewer's own view, the log, the move
form's number, the clock and the result. Built here, outside the view, from a game read with
its seats (archive.selectors.game_for_page)."""

from __future__ import annotations

from typing import Any

from django.utils.html import format_html_join

from games import clock
from games.archive.reads import seat_url
from games.archive.records import public_move
from games.engines import get_engine
from games.engines.base import JSON
from games.models import Game, Seat
from games.play import core, vacations
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
    seat_rows = [
        {
            "seat": s,
            "colour": colour(s.index),
            "to_move": s.index in to_move,
            "left": clock.format_left(s.deadline - now) if s.deadline else None,
            "you": s == my_seat,
            "url": seat_url(s),
            "dropped": bool(view and s.index in view.get("dropped", [])),
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
    log = format_html_join(
        "",
        '<li value="{}">{} <span class="notation">{}</span></li>',
        ((m["ply"], marks[m["colour"]], m["text"]) for m in moves),
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
        "clock_rule": wording.clock_rule(game.kind, len(seats), game.clock_duration),
        "polling": not game.is_over,
        "result_text": wording.result_text(
            game.result_reason, [s.name for s in seats if s.place is not None and s.place != 1]
        ),
        **extra,
    }
