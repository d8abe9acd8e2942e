"""The game page's context: the seats, the board from the viewer's own view, the log, the move
form's number, the clock and the result. Built here, outside the view, from a game read with
its seats (archive.selectors.game_for_page)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.cache import cache
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from games import clock
from games.archive import selectors
from games.archive.rating_reads import game_changes
from games.archive.reads import seat_url
from games.archive.records import public_move
from games.engines import get_engine
from games.engines.base import JSON
from games.models import Clock, Game, Move, Seat
from games.play import challenges, core, deadlines, vacations
from games.ui import colour, get_ui, mark_html, wording

logger = logging.getLogger(__name__)


# How long a drawn move log is kept: a game nobody looks at for this long is drawn afresh.
LOG_CACHE_SECONDS = 600


def _log_key(game: Game, viewer: int | None) -> str:
    """One kept log per game, viewer's seat (None: anybody else) and game over or not; it holds
    the ply and number of clock events it was drawn at (`_log`). The seat is in the key because
    what a log shows depends on it (a race hides the other runners' steps): no viewer ever gets
    a log drawn for another; where every viewer sees every move alike (Corn maze) the seat is
    left out, so the log one player's move answer drew is the next mover's to grow. The end is
    in it because a game over shows what it hid. The seed's hash, the game's own random token,
    keeps a database made again (its ids used again) from meeting the logs of its predecessor
    in the cache."""
    seat = "-" if viewer is None or get_engine(game.kind).moves_public else str(viewer)
    prefix = settings.GAME_LOG_CACHE_PREFIX
    return f"{prefix}{game.pk}:{game.seed_sha256[:16]}:{seat}:{int(game.is_over)}"


# A log line: its number, its class (a log with clock events gives each line one), the mover's
# mark and the notation (or the clock event's text).
LOG_LINE = '<li value="{}"{}>{} <span class="notation">{}</span></li>'
_MOVE_CLASS, _EVENT_CLASS = ' class="log-entry"', ' class="log-entry clock-event"'


@dataclass(frozen=True)
class _KeptLog:
    """A viewer's log as drawn at `ply` with `events` clock events (as `_log` returns it)."""

    ply: int
    events: int
    has_moves: bool
    html: str
    movers: tuple[int, ...]


def _logs_kept(game: Game, keys: list[str]) -> dict[str, _KeptLog]:
    try:
        found = cache.get_many(keys)
    except Exception:  # noqa: BLE001 - without the cache, the log is read and drawn
        logger.warning("could not read the log of game %s from the cache", game.pk, exc_info=True)
        return {}
    return {
        key: _KeptLog(*kept)
        for key, kept in found.items()
        if isinstance(kept, tuple) and len(kept) == 5
    }


def _logs_keep(game: Game, entries: dict[str, tuple[Any, ...]]) -> None:
    if not entries:
        return
    try:
        cache.set_many(entries, LOG_CACHE_SECONDS)
    except Exception:  # noqa: BLE001 - a cache outage must not break the page
        logger.warning("could not keep the log of game %s in the cache", game.pk, exc_info=True)


def _log(
    game: Game,
    viewer: int | None,
    clock_events: list[tuple[int, str]],
    new_move: Move | None = None,
    others: tuple[int | None, ...] = (),
) -> tuple[bool, SafeString, frozenset[int]]:
    """(whether there is a move, the log's items as HTML, the seats that moved) for this viewer:
    from the cache; or the kept log of an earlier ply with the moves since drawn after it
    (moves are append-only, one a ply; `new_move`, the move just played, is read no more); or
    read whole (one query) and drawn; then kept. Each clock event (a gift of time) comes after
    the move it followed, numbered as that move. A game that hides its log has none.

    `others`, with `new_move`: the game's other viewers (seats; None, anybody else). Where each
    has a log of its own (a Robot Maze Race), their logs kept at the ply before grow by the move
    too, each as that viewer sees it, in the same round trips to the cache: the next mover's
    answer then has its log at the ply before its move, and reads no moves either."""
    if get_ui(game.kind).hide_log:
        return False, SafeString(""), frozenset()
    key = _log_key(game, viewer)
    events = len(game.clock_events)
    other_keys: dict[str, int | None] = {}
    if new_move is not None and new_move.ply == game.ply:
        for other in others:
            other_keys.setdefault(_log_key(game, other), other)
        other_keys.pop(key, None)
    logs = _logs_kept(game, [key, *other_keys])
    entries = _others_grown(game, logs, other_keys, new_move, events, bool(clock_events))
    kept = logs.get(key)
    if kept is not None and (kept.ply, kept.events) == (game.ply, events):
        _logs_keep(game, entries)
        return kept.has_moves, mark_safe(kept.html), frozenset(kept.movers)  # noqa: S308 - drawn by format_html
    # Only the moves up to the game's ply as read (a move committed since is the next ply's).
    if kept is not None and kept.ply < game.ply and kept.events == events:
        # The clock events are all of plies up to the kept log's: the new moves come after.
        if new_move is not None and new_move.ply == game.ply == kept.ply + 1:
            read = [new_move]
        else:
            read = list(game.moves.filter(ply__gt=kept.ply, ply__lte=game.ply))
        html, has_moves, movers = kept.html, kept.has_moves, frozenset(kept.movers)
        lines = _log_lines(game, viewer, read, [], bool(clock_events))
    else:
        read = [m for m in game.moves.all() if m.ply <= game.ply]
        html, has_moves, movers = "", False, frozenset()
        lines = _log_lines(game, viewer, read, clock_events, bool(clock_events))
    html += lines[1]
    has_moves = has_moves or lines[0]
    movers |= {m.seat for m in read}
    if kept is None or (kept.ply, kept.events) <= (game.ply, events):
        entries[key] = (game.ply, events, has_moves, html, tuple(sorted(movers)))
    _logs_keep(game, entries)
    return has_moves, mark_safe(html), movers  # noqa: S308 - drawn by format_html


def _others_grown(
    game: Game,
    logs: dict[str, _KeptLog],
    other_keys: dict[str, int | None],
    new_move: Move | None,
    events: int,
    with_events: bool,
) -> dict[str, tuple[Any, ...]]:
    """The other viewers' logs kept at the ply before `new_move`'s, each grown by it as that
    viewer sees it (`_log`'s `others`)."""
    entries: dict[str, tuple[Any, ...]] = {}
    if new_move is None:
        return entries
    for other_key, other in other_keys.items():
        theirs = logs.get(other_key)
        if theirs is None or (theirs.ply, theirs.events) != (game.ply - 1, events):
            continue
        shown, lines = _log_lines(game, other, [new_move], [], with_events)
        movers = tuple(sorted({*theirs.movers, new_move.seat}))
        entries[other_key] = (
            game.ply,
            events,
            theirs.has_moves or shown,
            theirs.html + lines,
            movers,
        )
    return entries


def _log_lines(
    game: Game,
    viewer: int | None,
    moves: list[Move],
    clock_events: list[tuple[int, str]],
    with_events: bool,
) -> tuple[bool, str]:
    """(whether a move is shown, the lines) of these moves, only what the record shows this
    viewer, and clock events, in order; `with_events`: the log has clock events (its lines
    have a class)."""
    engine = get_engine(game.kind)
    marks: dict[int, SafeString] = {}
    # (the ply it follows, 0 for a move and 1 for a clock event, class, mark, text)
    entries: list[tuple[int, int, str, str, str]] = []
    for m in moves:
        if public_move(game.kind, m.move, m.outcome, m.seat, viewer, game.is_over) is None:
            continue
        c = colour(m.seat)
        if c not in marks:
            marks[c] = mark_html(c)
        line_class = _MOVE_CLASS if with_events else ""
        entries.append((m.ply, 0, line_class, marks[c], engine.notation(m.move, m.outcome)))
    shown = bool(entries)
    entries += [(ply, 1, _EVENT_CLASS, "", text) for ply, text in clock_events]
    entries.sort(key=lambda e: e[:2])
    # A clock event before the first move is numbered as the first move.
    return shown, "".join(
        format_html(LOG_LINE, max(1, ply), mark_safe(cls), mark, text)  # noqa: S308 - a constant
        for ply, _, cls, mark, text in entries
    )


def _clock_row(seat: Seat, zone: ZoneInfo | None, now: datetime) -> dict[str, Any]:
    """A seat's clock: its time left, counted on its clock (`zone`: weekends off in it); the
    weekends until its deadline, when the clock stands still, for the page to count down
    between (`stops`: JSON, [[start, end], ...], "" for none); whether it stands still now."""
    if not seat.deadline:
        return {"left": None, "stops": "", "stopped": False}
    if zone is None or seat.deadline <= now:
        return {"left": clock.format_left(seat.deadline - now), "stops": "", "stopped": False}
    stops = clock.weekends_between(now, seat.deadline, zone)
    return {
        "left": clock.format_left(clock.clock_between(now, seat.deadline, zone)),
        "stops": json.dumps([[a.isoformat(), b.isoformat()] for a, b in stops]) if stops else "",
        "stopped": bool(stops) and stops[0][0] == now,
    }


def game_context(
    game: Game,
    user: Any,
    *,
    error: str = "",
    draft: JSON | None = None,
    new_move: Move | None = None,
) -> dict[str, Any]:
    """The game page's context; `new_move`: the move just played in `game` (its answer), which
    the log need not read again."""
    seats: list[Seat] = list(game.seats.all())
    my_seat = next((s for s in seats if user.is_authenticated and s.user_id == user.pk), None)
    viewer = my_seat.index if my_seat else None
    engine = get_engine(game.kind)
    ui = get_ui(game.kind)
    view = engine.view(game.state, viewer) if game.state is not None else None
    # An aborted game's state still names the seats that were to move: nobody is, once over.
    playing = game.status == Game.Status.ACTIVE
    to_move = set(engine.to_move(game.state)) if playing and game.state is not None else set()
    if not playing:
        draft = None
    # A seat that left a game that goes on (resigned, or its clock ran out) has nothing left
    # to do in it. A Corn maze's are drawn out of the list; a race's leavers are in its strip
    # (and may win on cells covered).
    out = my_seat is not None and my_seat.index in core.seats_out(game)
    dropped = set(view.get("dropped", [])) if view is not None else set()
    now = clock.now()
    running = game.status == Game.Status.ACTIVE and game.clock_duration is not None
    zones = deadlines.seat_zones(game, seats) if running else {}
    gifts_given = {
        e.get("by")
        for e in game.clock_events
        if e.get("kind") == core.GIFT_KIND and e.get("ply") == game.ply
    }
    # The people this player may give another day (once a turn, while their clock runs); where
    # there are any, a seat with a clock and no button keeps a button's room (ui.seat_list), and
    # the board under the seats stays put as the turn goes round.
    people = [s for s in seats if s != my_seat and not s.bot]
    keeps_give_room = running and my_seat is not None and not out and bool(people)
    given_to = (
        {s.index for s in people if s.deadline is not None and s.deadline > now}
        if keeps_give_room and my_seat is not None and my_seat.index not in gifts_given
        else set()
    )
    # A rated game's end: each rated seat's change (one query, only then).
    changes = game_changes(game) if game.status == Game.Status.FINISHED else {}
    seat_rows = [
        {
            "seat": s,
            "colour": colour(s.index),
            "to_move": s.index in to_move,
            **_clock_row(s, zones.get(s.index), now),
            "you": s == my_seat,
            "url": seat_url(s),
            "dropped": s.index in dropped,
            **_bank_row(game, s, zones.get(s.index), now),
            "can_give": s.index in given_to,
            "give_room": keeps_give_room and s.deadline is not None and s.index not in given_to,
            "rating": changes.get(s.index),
            "vacation_until": vacations.on_vacation_until(s.user if s.user_id else None, now),
        }
        for s in seats
    ]
    names = {s.index: s.name for s in seats}
    clock_events = [
        (e.get("ply", 0), wording.clock_event_text(e, names)) for e in game.clock_events
    ]
    others = tuple(s.index for s in seats if s != my_seat) + ((None,) if my_seat else ())
    has_moves, log, movers = _log(game, viewer, clock_events, new_move, others)
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
        # A page without JavaScript does not poll: it is told to reload for a bot's move.
        "bot_to_move": playing and any(s.bot for s in seats if s.index in to_move),
        "my_seat": my_seat,
        "your_turn": my_seat is not None and my_seat.index in to_move,
        # What the move form carries so that the move counts once (play.core.move_number).
        "move_number": core.move_number(game, my_seat.index) if my_seat else game.ply,
        "view": view,
        "ui": ui,
        "board": ui.board(view, viewer, draft, game_over=not playing) if view is not None else None,
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
                wording.clock_rule(game.kind, len(seats), game.clock_duration, over=game.is_over),
                wording.clock_options_rule(game.clock_options, game.kind),
            )
            if part
        ),
        # Shown under the seats when the game has no log (a race).
        "clock_events": [text for _, text in clock_events] if ui.hide_log else [],
        "polling": not game.is_over,
        "rated_text": wording.rated_text(game),
        "result_text": _result_text(game, seats),
        **extra,
    }
    if out:
        context["hide_resign"] = True
    context.update(challenge_context(game, seats, my_seat, user, movers, ui.hide_log))
    if context["can_rematch"] and any(s.user_id is not None and s != my_seat for s in seats):
        # A player's finished game with other people: the page asks for their rematch offer
        # for a while (views.game_detail's poll).
        until = challenges.rematch_wait_until(game.finished_at, now)
        if until is not None:
            context.update(
                polling=True, poll_every=settings.REMATCH_POLL_EVERY, rematch_wait_until=until
            )
    return context


def _result_text(game: Game, seats: list[Seat]) -> str:
    """After who won: how. A game that ended on a resignation or a clock names each seat
    that left, as it left, where there were several (one query, only in a game where several
    can leave: more than two seats, or a race)."""
    losers = [s.name for s in seats if s.place is not None and s.place != 1]
    several_can_leave = len(seats) > 2 or wording.steps_apart(game.kind)
    if game.result_reason in {"resign", "timeout"} and several_can_leave:
        left = game.departures()
        if len(left) > 1:
            names = {s.index: s.name for s in seats}
            return wording.departures_text([(names[seat], how) for seat, how in left])
    return wording.result_text(game.result_reason, losers, game.kind)


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
    # A challenge called off (declined by another, withdrawn, expired) keeps its seats: no
    # answer is asked for any more.
    kept = next(
        (
            s
            for s in seats
            if is_open and user.is_authenticated and s.is_reserved and s.reserved_for_id == user.pk
        ),
        None,
    )
    creator_seats = {s.index for s in seats if s.user_id and s.user_id == game.created_by_id}
    if my_seat is None or game.status != Game.Status.ACTIVE:
        can_abort = False
    elif not core.play_started(game):
        can_abort = True  # nobody moved, or only a Robot Maze Race's set-up (challenges.abortable)
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
    if game.status == Game.Status.ABORTED:
        context["aborted_text"] = wording.aborted_text(
            game.result_reason, live_race=game.clock == Clock.LIVE, ply=game.ply
        )
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
    move's time and the bank (the bank is spent last), counted from its vacation's end if it
    is on one; else the bank it has."""
    if seat.bank is None or not game.clock_options.get("bank_days"):
        return {"bank": None}
    bank = seat.bank
    move_left = None
    if seat.deadline is not None and game.status == Game.Status.ACTIVE:
        # On vacation the clock stands where the vacation found it, until it ends.
        runs_from = vacations.on_vacation_until(seat.user if seat.user_id else None, now) or now
        left = max(clock.clock_between(runs_from, seat.deadline, zone), timedelta(0))
        bank = min(bank, left)
        move_left = clock.format_left(left - bank)
    return {
        "bank": clock.format_left(bank),
        "move_left": move_left,
        # A slow race's one clock is the whole race's.
        "turn_name": "This race" if wording.steps_apart(game.kind) else "This move",
    }
