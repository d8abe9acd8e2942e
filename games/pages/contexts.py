"""The game page's context: the seats, the board from the viewer's own view, the log, the move
form's number, the clock and the result. Built here, outside the view, from a game read with
its seats (archive.selectors.game_for_page)."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.urls import reverse
from django.utils.html import format_html_join
from django.utils.safestring import SafeString, mark_safe

from games import clock
from games.archive import selectors
from games.archive.rating_reads import game_changes
from games.archive.reads import seat_url
from games.archive.records import public_move
from games.engines import get_engine
from games.engines.base import JSON
from games.models import Game, Seat
from games.play import core, deadlines, vacations
from games.ui import SEAT_COLOURS, colour, get_ui, mark_html, wording

logger = logging.getLogger(__name__)


# How long a drawn move log is kept: a running game moves on to a new key at its next move.
LOG_CACHE_SECONDS = 600


def _log_key(game: Game, viewer: int | None) -> str:
    """Moves are append-only and every move adds one to the game's ply, so the log a viewer may
    see is the same for one game, ply, number of clock events (a gift of time is in the log and
    adds no ply), viewer's seat (None: anybody else) and game over or not. The seat is in the
    key because what a log shows depends on it (a race hides the other runners' steps): no
    viewer ever gets a log drawn for another. The seed's hash, the game's own random token,
    keeps a database made again (its ids used again) from meeting the logs of its predecessor
    in the cache."""
    seat = "-" if viewer is None else str(viewer)
    prefix = settings.GAME_LOG_CACHE_PREFIX
    events = len(game.clock_events)
    return (
        f"{prefix}{game.pk}:{game.seed_sha256[:16]}:{game.ply}:{events}:{seat}:{int(game.is_over)}"
    )


def _log(
    game: Game, viewer: int | None, clock_events: list[tuple[int, str]]
) -> tuple[bool, SafeString, frozenset[int]]:
    """(whether there is a move, the log's items as HTML, the seats that moved) for this viewer:
    from the cache, or read (one query) and drawn, then kept. Each clock event (a gift of time)
    comes after the move it followed, numbered as that move. A game that hides its log has
    none."""
    if get_ui(game.kind).hide_log:
        return False, SafeString(""), frozenset()
    key = _log_key(game, viewer)
    try:
        kept = cache.get(key)
    except Exception:  # noqa: BLE001 - without the cache, the log is read and drawn
        logger.warning("could not read the log of game %s from the cache", game.pk, exc_info=True)
        kept = None
    if isinstance(kept, tuple) and len(kept) == 3:
        return bool(kept[0]), mark_safe(kept[1]), frozenset(kept[2])  # noqa: S308 - drawn by format_html_join
    engine = get_engine(game.kind)
    marks = {c: mark_html(c) for c in range(SEAT_COLOURS)}
    # Only the moves up to the game's ply as read (a move committed since is the next ply's).
    read = [m for m in game.moves.all() if m.ply <= game.ply]
    movers = frozenset(m.seat for m in read)
    moves = [
        (m.ply, marks[colour(m.seat)], engine.notation(m.move, m.outcome))
        for m in read
        # Only what the record shows this viewer.
        if public_move(game.kind, m.move, m.outcome, m.seat, viewer, game.is_over) is not None
    ]
    if clock_events:
        entries: list[tuple[int, int, str, str, str]] = [
            (ply, 0, mark, text, "") for ply, mark, text in moves
        ]
        entries += [(ply, 1, "", text, " clock-event") for ply, text in clock_events]
        log = format_html_join(
            "",
            '<li value="{}" class="log-entry{}">{} <span class="notation">{}</span></li>',
            ((max(1, e[0]), e[4], e[2], e[3]) for e in sorted(entries, key=lambda e: e[:2])),
        )
    else:
        log = format_html_join("", '<li value="{}">{} <span class="notation">{}</span></li>', moves)
    try:
        cache.set(key, (bool(moves), str(log), sorted(movers)), LOG_CACHE_SECONDS)
    except Exception:  # noqa: BLE001 - a cache outage must not break the page
        logger.warning("could not keep the log of game %s in the cache", game.pk, exc_info=True)
    return bool(moves), log, movers


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
    names = {s.index: s.name for s in seats}
    clock_events = [
        (e.get("ply", 0), wording.clock_event_text(e, names)) for e in game.clock_events
    ]
    has_moves, log, movers = _log(game, viewer, clock_events)
    # A private game is joined through its invite link only (play.challenges).
    can_join = (
        game.status == Game.Status.OPEN
        and my_seat is None
        and any(s.is_open for s in seats)
        and not game.invite_token
    )
    # A game's own page context (a live race: Ready, countdown, polling).
    extra = ui.page_context(game, view, viewer, now)
    context = {
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
    context.update(challenge_context(game, seats, my_seat, user, movers, ui.hide_log))
    return context


def challenge_context(
    game: Game,
    seats: list[Seat],
    my_seat: Seat | None,
    user: Any,
    movers: frozenset[int],
    hide_log: bool,
) -> dict[str, Any]:
    """Challenges, invites, withdraw, abort and rematch on the game page (play.challenges). The
    invite link is for the creator's eyes only. A query only on a finished game's page for its
    players (the rematch offer)."""
    is_creator = user.is_authenticated and game.created_by_id == user.pk
    is_open = game.status == Game.Status.OPEN
    kept = next(
        (
            s
            for s in seats
            if user.is_authenticated and s.is_reserved and s.reserved_for_id == user.pk
        ),
        None,
    )
    creator_seats = {s.index for s in seats if s.user_id and s.user_id == game.created_by_id}
    if my_seat is None or game.status != Game.Status.ACTIVE:
        can_abort = False
    elif game.ply == 0:
        can_abort = True
    else:
        # A race's page reads no moves: its Abort is offered only before the first step, and
        # the service answers for any later one.
        can_abort = not hide_log and movers <= creator_seats
    context: dict[str, Any] = {
        "kept_for_you": kept,
        "waiting_for": [
            s.reserved_for.get_username() for s in seats if s.is_reserved and s.reserved_for
        ],
        "can_withdraw": is_open and is_creator,
        "invite_url": (
            settings.SITE_URL + reverse("game_invite", args=[game.pk, game.invite_token])
            if is_open and is_creator and game.invite_token
            else ""
        ),
        "can_abort": can_abort,
        "rematch": None,
        "can_rematch": False,
        "my_rematch_seat": None,
    }
    if game.status == Game.Status.ABORTED and game.result_reason in wording.CALLED_OFF_TEXT:
        context["aborted_text"] = wording.CALLED_OFF_TEXT[game.result_reason]
    if game.status == Game.Status.FINISHED and my_seat is not None:
        rematch = selectors.rematch_of(game)
        context["rematch"] = rematch
        context["can_rematch"] = rematch is None
        if rematch is not None:
            context["rematch_seats"] = list(rematch.seats.all())
            context["my_rematch_seat"] = next(
                (
                    s
                    for s in context["rematch_seats"]
                    if s.user_id == user.pk or s.reserved_for_id == user.pk
                ),
                None,
            )
    return context


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
