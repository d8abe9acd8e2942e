"""The game page's context: the seats, the board from the viewer's own view, the log, the move
form's number, the clock and the result. Built here, outside the view, from a game read with
its seats (archive.selectors.game_for_page)."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.utils.html import format_html_join
from django.utils.safestring import SafeString, mark_safe

from games import clock
from games.archive.reads import seat_url
from games.archive.records import public_move
from games.engines import get_engine
from games.engines.base import JSON
from games.models import Game, Seat
from games.play import core
from games.ui import SEAT_COLOURS, colour, get_ui, mark_html, wording

logger = logging.getLogger(__name__)


# How long a drawn move log is kept: a running game moves on to a new key at its next move.
LOG_CACHE_SECONDS = 600


def _log_key(game: Game, viewer: int | None) -> str:
    """Moves are append-only and every move adds one to the game's ply, so the log a viewer may
    see is the same for one game, ply, viewer's seat (None: anybody else) and game over or not.
    The seat is in the key because what a log shows depends on it (a race hides the other
    runners' steps): no viewer ever gets a log drawn for another. The seed's hash, the game's
    own random token, keeps a database made again (its ids used again) from meeting the logs
    of its predecessor in the cache."""
    seat = "-" if viewer is None else str(viewer)
    prefix = settings.GAME_LOG_CACHE_PREFIX
    return f"{prefix}{game.pk}:{game.seed_sha256[:16]}:{game.ply}:{seat}:{int(game.is_over)}"


def _log(game: Game, viewer: int | None) -> tuple[bool, SafeString]:
    """(whether there is a move, the log's items as HTML) for this viewer: from the cache, or
    read (one query) and drawn, then kept. A game that hides its log has none."""
    if get_ui(game.kind).hide_log:
        return False, SafeString("")
    key = _log_key(game, viewer)
    try:
        kept = cache.get(key)
    except Exception:  # noqa: BLE001 - without the cache, the log is read and drawn
        logger.warning("could not read the log of game %s from the cache", game.pk, exc_info=True)
        kept = None
    if isinstance(kept, tuple) and len(kept) == 2:
        return bool(kept[0]), mark_safe(kept[1])  # noqa: S308 - drawn by format_html_join
    engine = get_engine(game.kind)
    marks = {c: mark_html(c) for c in range(SEAT_COLOURS)}
    moves = [
        (m.ply, marks[colour(m.seat)], engine.notation(m.move, m.outcome))
        for m in game.moves.all()
        # Only the moves up to the game's ply as read (a move committed since is the next
        # ply's), and only what the record shows this viewer.
        if m.ply <= game.ply
        and public_move(game.kind, m.move, m.outcome, m.seat, viewer, game.is_over) is not None
    ]
    log = format_html_join("", '<li value="{}">{} <span class="notation">{}</span></li>', moves)
    try:
        cache.set(key, (bool(moves), str(log)), LOG_CACHE_SECONDS)
    except Exception:  # noqa: BLE001 - a cache outage must not break the page
        logger.warning("could not keep the log of game %s in the cache", game.pk, exc_info=True)
    return bool(moves), log


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
        }
        for s in seats
    ]
    has_moves, log = _log(game, viewer)
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
        # Whether the log has a move; the log drawn at once: a game of hundreds of moves shows
        # them all (`_log`, cached per game, ply and viewer).
        "moves": has_moves,
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
