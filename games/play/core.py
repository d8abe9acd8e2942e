"""Every write to a game goes through here: lock the game, check, apply the engine, record the
move, end the game, and queue what follows (bot turns, mails) on commit. Views and tasks call
these. How a game's moves are timed is its pace's (games/play/pacing.py): the core asks
`pace_for(game)` and never which game or pace it runs.

The public entry points say how they lock. Those that take a game id open their own
transaction and take the game's lock (`game_locked`); those that take a Game say "the caller
holds the game lock": call them inside `transaction.atomic()` on a game read by
`game_locked`."""

from __future__ import annotations

import hashlib
import logging
import random
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import User
from django.db import OperationalError, connections, router, transaction
from django.db.models import BooleanField, QuerySet
from django.db.models.expressions import RawSQL
from django.db.transaction import TransactionManagementError

from games import clock, engines, statements
from games.archive import ratings
from games.archive import results as player_results
from games.bots import get_bot, levels
from games.engines import IllegalMove, get_engine
from games.engines.base import JSON, Engine, Result
from games.mail import notices
from games.models import ABORTED_ON_TIME, Clock, Game, Move, Profile, Seat, json_safe
from games.play import deadlines, pacing, vacations

logger = logging.getLogger(__name__)

LOCK_NOT_AVAILABLE = "55P03"  # PostgreSQL's SQLSTATE for a lock_timeout that ran out


NOT_STARTED = "The game has not started yet: it is waiting for players."


class GameError(Exception):
    """An action the site refuses. `str(exc)` is a sentence for the player."""


class MoveRefused(GameError):
    pass


class GameBusy(GameError):
    """The game's lock was not free within GAME_LOCK_TIMEOUT_MS: nothing was changed, and the
    player may simply try again. The views answer it 409, as every GameError."""

    def __init__(self) -> None:
        super().__init__("The game is busy: another move is being played. Try again in a moment.")


@dataclass(frozen=True)
class SeatPlan:
    """Who sits in a seat when a game is created: a bot level, or "" for a person."""

    bot: str = ""


def game_create(
    *,
    kind: str,
    creator: User,
    options: JSON,
    clock_choice: str,
    seats: Sequence[SeatPlan],
    clock_options: JSON | None = None,
    rated: bool = True,
    reserved: Sequence[User] = (),
    invite: bool = False,
) -> Game:
    """A new game. The creator sits in seat 0 unless a bot does (a bot-only game, such as
    selfplay makes); the game starts at once if no seat is left open. `clock_options` (a time
    bank, weekends off) are checked by `clock_options_checked`. `rated`: whether its end may
    change ratings (never with a guest, nor with bots alone: games/archive/ratings.py).
    `reserved`: challenged players (play.challenges.challenged_players), each given the next
    seat for a person, kept for them to accept; `invite`: a private game, joined only through
    its invite link."""
    engine = _engine(kind)
    if not engine.MIN_SEATS <= len(seats) <= engine.MAX_SEATS:
        raise GameError(f"{engine.TITLE} is for {engine.MIN_SEATS} to {engine.MAX_SEATS} players.")
    try:
        options = engine.validate_options(options, len(seats))
    except ValueError as exc:
        raise GameError(str(exc)) from None
    if clock_choice not in Clock.values or (clock_choice == Clock.LIVE) != (
        options.get("mode") == "live"
    ):
        raise GameError("Choose a clock of 3 days or 30 days per move.")
    clock_options = clock_options_checked(clock_options or {}, clock_choice)
    known = levels(kind)
    for plan in seats:
        if plan.bot and plan.bot not in known:
            raise GameError(f"There is no bot named {plan.bot!r}; choose one of {known}.")
    people = [i for i, plan in enumerate(seats) if i > 0 and not plan.bot]
    if len(reserved) > len(people):
        challenged = f"{len(reserved)} player{'' if len(reserved) == 1 else 's'}"
        room = {0: "no seat", 1: "one seat"}.get(len(people), f"{len(people)} seats")
        raise GameError(
            f"You challenged {challenged}, but this game has {room} for people besides "
            "yours: add seats for people, or challenge fewer players."
        )
    kept = dict(zip(people, reserved, strict=False))
    seed, seed_sha256 = Game.new_seed()
    with transaction.atomic():
        game = Game.objects.create(
            kind=kind,
            options=options,
            clock=clock_choice,
            seed=seed,
            seed_sha256=seed_sha256,
            created_by=creator,
            clock_options=clock_options,
            rated=rated and any(not plan.bot for plan in seats) and not _is_guest(creator),
            invite_token=invite_token_new() if invite else "",
        )
        now = clock.now()
        bank = deadlines.bank_full(game) if "bank_days" in clock_options else None
        Seat.objects.bulk_create(
            Seat(
                game=game,
                index=i,
                user=creator if i == 0 and not plan.bot else None,
                bot=plan.bot,
                joined_at=now if (i == 0 or plan.bot) else None,
                bank=None if plan.bot else bank,
                reserved_for=kept.get(i),
            )
            for i, plan in enumerate(seats)
        )
        if all(plan.bot or i == 0 for i, plan in enumerate(seats)):
            _start(game)
        elif kept:
            notices.challenges_made(game=game, seats=list(game.seats.filter(index__in=kept)))
    return game


# The time banks a game may be created with, in days (0: none).
BANK_DAYS = (0, 7, 14)


def clock_options_checked(options: JSON, clock_choice: str) -> JSON:
    """A game's clock options as stored (`Game.clock_options`), or GameError: `bank_days` one of
    BANK_DAYS, `weekends_off` true or false; none on a live race, which keeps its own clock."""
    if not isinstance(options, dict) or set(options) - {"bank_days", "weekends_off"}:
        raise GameError("Those clock options are not known.")
    bank = options.get("bank_days", 0)
    weekends = options.get("weekends_off", False)
    if isinstance(bank, bool) or bank not in BANK_DAYS:
        raise GameError("Choose a time bank of 7 or 14 days, or none.")
    if not isinstance(weekends, bool):
        raise GameError("Weekends off is either on or off.")
    checked: JSON = {}
    if bank:
        checked["bank_days"] = bank
    if weekends:
        checked["weekends_off"] = True
    if checked and clock_choice == Clock.LIVE:
        raise GameError(
            "A live Maze Race keeps its own clock: it has no time bank and no weekends off."
        )
    return checked


def invite_token_new() -> str:
    return secrets.token_urlsafe(24)


def invite_token_matches(game: Game, token: str | None) -> bool:
    """Whether `token` is this private game's invite token (compared in constant time)."""
    return bool(game.invite_token) and secrets.compare_digest(
        (token or "").encode(), game.invite_token.encode()
    )


def game_start_when_full(game: Game) -> bool:
    """Start an open game once every seat has a person or a bot; whether it started. The
    caller holds the game lock."""
    if game.status == Game.Status.OPEN and all(s.user_id or s.bot for s in game.seats.all()):
        _start(game)
        return True
    return False


def game_join(*, game_id: int, user: User, token: str | None = None) -> Seat:
    """Take the first open seat; the game starts when the last seat is filled. A private game
    is joined only with its invite `token`; a seat kept for a challenged player is theirs to
    accept (play.challenges), not to join."""
    with transaction.atomic():
        game = game_locked(game_id)
        if game.invite_token and not invite_token_matches(game, token):
            raise GameError("This game is private: join it through the link its creator shared.")
        if game.status != Game.Status.OPEN:
            raise GameError("This game is not waiting for players any more.")
        seats = list(game.seats.order_by("index"))
        if any(s.user_id == user.pk for s in seats):
            raise GameError("You already have a seat in this game.")
        if any(s.is_reserved and s.reserved_for_id == user.pk for s in seats):
            raise GameError("A seat is kept for you here: accept the challenge instead.")
        free = [s for s in seats if s.is_open]
        if not free:
            raise GameError("Every seat is taken.")
        seat = free[0]
        seat.user = user
        seat.joined_at = clock.now()
        seat.save(update_fields=["user", "joined_at"])
        game.version += 1
        # A guest's seat makes the game unrated, and the page says so from now on.
        game.rated = game.rated and not _is_guest(user)  # a query only for a rated game
        game.save(update_fields=["version", "rated"])
        if all(s.user_id or s.bot for s in seats):
            _start(game)
    return seat


def move_submit(*, game_id: int, user: User, number: int, move: JSON) -> Move:
    """A person's move. `number` is the move number the player's form carried (`move_number`):
    a move for an earlier position, or the same move posted again, is refused."""
    return move_read_and_submit(
        game_id=game_id,
        user=user,
        read_number=lambda game: number,
        read=lambda game, view: move,
    )


def move_read_and_submit(
    *,
    game_id: int,
    user: User,
    read_number: Callable[[Game], int],
    read: Callable[[Game, JSON], JSON],
) -> Move:
    """A person's move, read from the posted form under the game's lock, so that the game is
    read once and the form is parsed against the position the move is played on (`read`, given
    the game and the seat's own view). The move number the form carried (`read_number`) is
    checked first: a form for another position is refused before its move is read, for what
    it holds may mean nothing in this one. Whatever the readers raise (a form that cannot be
    read) passes through, and nothing is changed."""
    with transaction.atomic():
        game = game_locked(game_id)
        # The seats once, with what a mail to their people needs: the move, its deadlines,
        # its mails, the bot check and the answer's page all use these (`game.seats.all()`).
        seats = seats_read(game)
        seat = next((s for s in seats if s.user_id == user.pk), None)
        if seat is None:
            raise MoveRefused("You have no seat in this game.")
        if game.state is None:
            raise MoveRefused(NOT_STARTED)
        number = read_number(game)
        _move_refused_early(game, seat, number)
        move = read(game, _engine(game.kind).view(game.state, seat.index))
        played = move_play(game, seat, number, move)
        if vacations.on_vacation_until(seat.user, played.at) is not None:
            # A move ends the vacation: every other deadline of theirs is pulled back. The
            # answer's page is drawn from these rows: they show the player back, at the
            # game's version the return wrote.
            back = vacations.vacation_end(user=user, now=played.at)
            if back is not None and seat.user is not None:
                seat.user.vacation = back
            game.refresh_from_db(fields=["version"])
        return played


def seats_read(game: Game) -> list[Seat]:
    """The game's seats, read once with their people (user, profile, mail preferences) and
    kept on `game`, so that `game.seats.all()` reads no more until the request ends. The
    caller holds the game lock, and every change to a seat from here on is made to these
    objects (deadlines_set, game_end), so they stay what the database holds."""
    seats = _SEATS_WITH_PEOPLE.fetch(game.pk, alias=router.db_for_write(Seat))
    for seat in seats:
        Seat.game.field.set_cached_value(seat, game)
    # As prefetch_related keeps them: `game.seats.all()` answers from this, and a filter on
    # it is still the game's seats.
    kept = game.seats.get_queryset()
    kept._result_cache = seats
    kept._prefetch_done = True  # type: ignore[attr-defined]
    game._prefetched_objects_cache = {"seats": kept}  # type: ignore[attr-defined]
    return seats


def move_number(game: Game, seat_index: int) -> int:
    """The number this seat's next move carries (engines.move_number): the game's ply in a game
    by turns, the runner's own count of steps in a race."""
    if game.state is None:
        return game.ply
    return engines.move_number(game.kind, game.state, seat_index, game.ply)


def resign_refusal(game: Game, seat: Seat | None) -> str | None:
    """Why this seat (None: the viewer has none) may not resign this game, or None if it may:
    asked by the resignation and by the page that asks whether to resign."""
    if seat is None:
        return "You have no seat in this game."
    if game.status == Game.Status.OPEN:
        return NOT_STARTED
    if game.status != Game.Status.ACTIVE:
        return "The game is over."
    if seat.index in seats_out(game):
        return "You are out of this game already."
    return None


def game_resign(*, game_id: int, user: User) -> Move:
    with transaction.atomic():
        game = game_locked(game_id)
        seat = game.seats.filter(user=user).first()
        refusal = resign_refusal(game, seat)
        if refusal is not None:
            raise MoveRefused(refusal)
        assert seat is not None
        return move_play(game, seat, move_number(game, seat.index), {"resign": True}, by_site=True)


def bot_turn_play(*, game_id: int, ply: int) -> Move | None:
    """Let every bot whose turn it is at `ply` move. Safe to run twice: a second run finds the
    ply moved on and does nothing."""
    game = Game.objects.get(pk=game_id)
    if game.status != Game.Status.ACTIVE or game.ply != ply:
        return None
    if not pacing.pace_for(game).bots_by_turn:
        return None
    engine = _engine(game.kind)
    assert game.state is not None
    seats = {s.index: s for s in game.seats.all()}
    bot_seats = [i for i in engine.to_move(game.state) if seats[i].bot]
    if not bot_seats:
        return None
    index = bot_seats[0]
    # The bot thinks outside the lock; the ply check below drops its move if the game moved on.
    view = engine.view(game.state, index)
    rng = random.Random(hashlib.sha256(f"{game.seed_sha256}:{ply}:{index}".encode()).digest())
    move = get_bot(game.kind, seats[index].bot)(view, index, rng)
    with transaction.atomic():
        game = game_locked(game_id)
        if game.status != Game.Status.ACTIVE or game.ply != ply:
            return None
        return move_play(game, game.seats.get(index=index), move_number(game, index), move)


def seat_timeout(*, game_id: int, seat_index: int) -> int:
    """End a seat's turn if its deadline has passed (see `seats_time_out`)."""
    with transaction.atomic():
        return seats_time_out([(game_locked(game_id), seat_index)])


def seats_time_out(expired: Sequence[tuple[Game, int]]) -> int:
    """Time out these (game, seat index) pairs, the sweep's batch, their games locked by the
    caller and read under that lock: a seat that ran out loses, or is dropped while play goes
    on; a game with no move yet is aborted. A seat whose deadline has moved or not passed, or
    whose game is over, is left alone, so this is safe to run twice. Games that end are
    written together (a few queries for the whole batch); a game that goes on is written on
    its own. Returns how many seats timed out. Call it in a transaction."""
    now = clock.now()
    games: dict[int, Game] = {}
    for game, _ in expired:
        games.setdefault(game.pk, game)
    seats: dict[int, list[Seat]] = {game_id: [] for game_id in games}
    for seat in _seats_with_people().filter(game_id__in=games).order_by("index"):
        seats[seat.game_id].append(seat)
    endings: list[Ending] = []
    moves: list[Move] = []
    done = 0
    for expired_game, index in expired:
        game_id = expired_game.pk
        game = games[game_id]
        if game.status != Game.Status.ACTIVE:
            continue
        seat = seats[game_id][index]
        if seat.deadline is None or seat.deadline > now:
            continue
        # A game nobody has played in yet is aborted, as the rules say, before any automatic
        # vacation could hold it open.
        if not play_started(game):
            done += 1
            endings.append(Ending(game, seats[game_id], now, ABORTED_ON_TIME, None))
            continue
        if vacations.automatic_vacation(game=game, seat=seat, now=now):
            continue  # its deadline moved past the vacation
        done += 1
        record, result = _move_apply(
            game, seat, move_number(game, index), {"timeout": True}, by_site=True, now=now
        )
        if result is None or not pacing.pace_for(game).ends_in_batch:
            record.save()
            _move_settle(game, result, now=now, moved=seat)
            if result is None:
                notices.seat_dropped(game=game, seat=seat)
        else:
            moves.append(record)
            endings.append(Ending(game, seats[game_id], now, result.reason, result.places))
    Move.objects.bulk_create(moves)
    _games_end(endings)
    statements.rows_update([e.game for e in endings], [*GAME_END_FIELDS, "state", "ply"])
    return done


# --- inside the lock -------------------------------------------------------------------------


def _engine(kind: str) -> Engine:
    try:
        return get_engine(kind)
    except KeyError:
        raise GameError(f"There is no game called {kind!r}.") from None


def _is_guest(user: User) -> bool:
    return Profile.objects.filter(user=user, is_guest=True).exists()


def play_started(game: Game) -> bool:
    """Whether a real move has been made: set-up moves (Robot Maze Race) do not count."""
    if game.state is None:
        return game.ply > 0
    return _engine(game.kind).play_started(game.state, game.ply)


def game_locked(game_id: int) -> Game:
    """The game, read under its row lock, which every write to it takes. Call it inside
    `transaction.atomic()`: the lock is held until that transaction ends. The wait for the lock
    is bounded (GAME_LOCK_TIMEOUT_MS, for the rest of the transaction on PostgreSQL): past
    it, GameBusy, and the transaction is rolled back by the exception."""
    alias = router.db_for_write(Game)
    connection = connections[alias]
    if connection.get_autocommit():
        raise TransactionManagementError("game_locked needs a transaction: call it in atomic().")
    try:
        if connection.vendor == "postgresql":
            found = _GAME_LOCKED_BOUNDED.fetch(
                game_id, f"{int(settings.GAME_LOCK_TIMEOUT_MS)}ms", alias=alias
            )
        else:
            found = _GAME_LOCKED.fetch(game_id, alias=alias)
    except OperationalError as exc:
        if getattr(exc.__cause__, "sqlstate", None) == LOCK_NOT_AVAILABLE:
            raise GameBusy() from exc
        raise
    if not found:
        raise GameError("There is no such game.")
    game = found[0]
    _as_read(game)
    return game


# Markers of the compiled reads' parameters (statements.Compiled): values no real one takes.
_GAME_ID = -7_000_001
_TIMEOUT = "-7000002ms"

_GAME_LOCKED = statements.Compiled(
    lambda game_id: Game.objects.select_for_update().filter(pk=game_id), _GAME_ID
)
# The bound on the lock's wait set by the statement that takes the lock, one round trip: the
# filter runs on the game's row before the row is locked, and set_config(..., true) holds
# for the rest of the transaction.
_GAME_LOCKED_BOUNDED = statements.Compiled(
    lambda game_id, timeout: Game.objects.select_for_update().filter(
        RawSQL(
            "set_config('lock_timeout', %s, true) IS NOT NULL",
            [timeout],
            output_field=BooleanField(),
        ),
        pk=game_id,
    ),
    _GAME_ID,
    _TIMEOUT,
)


# Written with every save of a game under its lock: JSON may have changed in place.
_ALWAYS_SAVED = ("state", "options", "ply", "version")


def _as_read(game: Game) -> None:
    """Remember the columns of a game just read under its lock, for `game_save`."""
    game.__dict__["_as_read"] = {
        f.attname: getattr(game, f.attname) for f in Game._meta.concrete_fields if not f.primary_key
    }


def game_save(game: Game) -> None:
    """Save a game read by `game_locked`: only the columns that changed since (and always its
    state, options, ply and version), one short UPDATE instead of every column. A game read
    otherwise is saved whole."""
    as_read: dict[str, object] | None = game.__dict__.get("_as_read")
    if as_read is None:
        game.save()
        return
    changed = [
        f.name
        for f in Game._meta.concrete_fields
        if not f.primary_key
        and (f.name in _ALWAYS_SAVED or getattr(game, f.attname) != as_read.get(f.attname))
    ]
    statements.rows_update([game], changed)
    _as_read(game)


def _start(game: Game) -> None:
    engine = _engine(game.kind)
    seats = game.seats.count()
    game.state = json_safe(engine.start(bytes(game.seed), game.options, seats))
    game.status = Game.Status.ACTIVE
    game.started_at = clock.now()
    game.version += 1
    game.save(update_fields=["state", "status", "started_at", "version"])
    deadlines.turn_deadlines(game, engine)
    pacing.pace_for(game).started(game)
    pacing.pace_for(game).after_commit(game)


def move_play(
    game: Game,
    seat: Seat,
    number: int,
    move: JSON,
    *,
    by_site: bool = False,
    at_ms: int | None = None,
) -> Move:
    """Check, apply and store a move, and settle what follows it (the end of the game, the next
    deadlines, the pace's part, what is queued on commit). The caller holds the game lock.
    `number` is the move number the move carries (`move_number`); `by_site`: a timeout or a
    resignation; `at_ms`: a race step's landing time, given by the race's own clock."""
    now = clock.now()
    record, result = _move_apply(game, seat, number, move, by_site=by_site, at_ms=at_ms, now=now)
    # The move, the game, its seats' deadlines, reminders and mails: one statement, mostly.
    with statements.writes_together(router.db_for_write(Move)):
        statements.rows_insert([record])
        _move_settle(game, result, now=now, moved=seat)
    return record


def _move_refused_early(game: Game, seat: Seat, number: int) -> None:
    """Refuse a move that comes too early, too late or for another position, whatever it is.
    Every move, a person's, a bot's or the site's, carries its number: posted twice, it counts
    once; the second is told so where its seat has moved since that position."""
    if game.status == Game.Status.OPEN:
        raise MoveRefused(NOT_STARTED)
    if game.is_over:
        # A runner's last key, pressed as the race closed, is no mistake of theirs.
        over = "The race closed before this step." if _engine(game.kind).SEATS_MOVE_APART else ""
        raise MoveRefused(over or "The game is over.")
    if number == move_number(game, seat.index):
        return
    engine = _engine(game.kind)
    if (
        not engine.SEATS_MOVE_APART
        and 0 <= number < game.ply
        and game.moves.filter(ply__gt=number, seat=seat.index).exists()
    ):
        raise MoveRefused(engine.PLAYED_ALREADY)
    raise MoveRefused(engine.STALE_MOVE)


def _move_apply(
    game: Game,
    seat: Seat,
    number: int,
    move: JSON,
    *,
    by_site: bool = False,
    at_ms: int | None = None,
    now: datetime,
) -> tuple[Move, Result | None]:
    """Check a move and apply it to `game` in memory: its state, ply and version. Returns the
    move, not saved yet, and the result if the game is over. The caller holds the game lock,
    so of the same move posted many times at once (one `number`) exactly one is applied."""
    _move_refused_early(game, seat, number)
    engine = _engine(game.kind)
    if not by_site and any(k in move for k in ("timeout", "resign")):
        raise MoveRefused("That is not a move.")
    assert game.state is not None
    if (
        not by_site
        and seat.deadline is not None
        and seat.deadline <= now
        and seat.index in engine.to_move(game.state)
    ):
        raise MoveRefused(engine.OUT_OF_TIME)
    move = pacing.pace_for(game).stamped(game, move, now=now, at_ms=at_ms)
    try:
        state, outcome = engine.apply(game.state, seat.index, move)
    except IllegalMove as exc:
        raise MoveRefused(str(exc)) from None
    game.ply += 1
    record = Move(
        game=game,
        ply=game.ply,
        seat=seat.index,
        at=now,
        move=json_safe(move),
        outcome=outcome if engine.APPLY_GIVES_JSON else json_safe(outcome),
    )
    game.state = state if engine.APPLY_GIVES_JSON else json_safe(state)
    game.version += 1
    return record, engine.result(game.state)


def _move_settle(game: Game, result: Result | None, *, now: datetime, moved: Seat) -> None:
    """What follows a stored move of seat `moved`: the end of the game or the next deadlines,
    the seat's leaving of a game that goes on, the race clock, and the bot turns queued on
    commit."""
    if result is not None:
        game_end(game, at=now, reason=result.reason, places=result.places)
    elif moved.out_at is None and moved.index in seats_out(game):
        moved.out_at = now
        statements.rows_update([moved], ["out_at"])
    pacing.pace_for(game).moved(game)
    game_save(game)
    if result is None:
        deadlines.turn_deadlines(game, _engine(game.kind), moved=moved.index)
    pacing.pace_for(game).after_commit(game)


@dataclass
class Ending:
    game: Game
    seats: list[Seat]
    at: datetime
    reason: str
    places: Sequence[int] | None  # places[seat index]; None: aborted


# What ending a game changes on the Game row; the caller saves it.
GAME_END_FIELDS = (
    "status",
    "finished_at",
    "result_reason",
    "race_deadline",
    "version",
    "rated",
    "rating_seq",
)


def game_end(game: Game, *, at: datetime, reason: str, places: Sequence[int] | None) -> None:
    """The one way a game ends: finished with every seat's place, or aborted (no places). The
    caller saves `game`; seats are saved here and "game over" mails are written."""
    seats = deadlines.seats_kept(game)
    if seats is None:
        seats = list(_seats_with_people().filter(game=game))
    _games_end([Ending(game, seats, at, reason, places)])


def _games_end(endings: Sequence[Ending]) -> None:
    for ending in endings:
        game = ending.game
        game.status = Game.Status.FINISHED if ending.places is not None else Game.Status.ABORTED
        game.finished_at = ending.at
        game.result_reason = ending.reason
        game.race_deadline = None
        game.version += 1
        for seat in ending.seats:
            seat.place = ending.places[seat.index] if ending.places is not None else None
            seat.finished_at = ending.at
    statements.rows_update([s for e in endings for s in e.seats], ["place", "finished_at"])
    deadlines.deadlines_set([(e.game, seat, None) for e in endings for seat in e.seats])
    player_results.results_count([(e.game, e.seats) for e in endings])
    ratings.ratings_update([(e.game, e.seats) for e in endings])
    notices.games_ended([e.game for e in endings], [s for e in endings for s in e.seats])


def _seats_with_people() -> QuerySet[Seat]:
    """Seats with what a mail to their person needs."""
    return Seat.objects.select_related(
        "user__profile", "user__email_preferences", "user__vacation"
    ).order_by("index")


_SEATS_WITH_PEOPLE = statements.Compiled(
    lambda game_id: _seats_with_people().filter(game_id=game_id), _GAME_ID
)


# --- deadlines moved by the admin ---------------------------------------------------------------


def deadline_move_check(*, game: Game, seat: Seat | None, deadline: datetime | None) -> None:
    """Refuse (GameError) to move a deadline that cannot move: only a seat to move in a running
    game has one, and it keeps one."""
    if game.status != Game.Status.ACTIVE:
        raise GameError("The game is not running: none of its seats has a deadline to move.")
    if seat is None:
        raise GameError("There is no such seat in this game.")
    if seat.deadline is None:
        raise GameError("Only a seat to move has a deadline, and this seat is not to move.")
    if deadline is None:
        raise GameError("A seat to move needs a deadline: give it a new time instead of none.")


def seat_deadline_move(*, game_id: int, seat_index: int, deadline: datetime) -> Seat:
    """Move the deadline of a seat to move, earlier or later, under the game's lock; its
    reminder follows (`deadlines_set`). A deadline already past times the seat out at the next
    sweep."""
    with transaction.atomic():
        game = game_locked(game_id)
        seat = game.seats.filter(index=seat_index).first()
        deadline_move_check(game=game, seat=seat, deadline=deadline)
        assert seat is not None
        if deadline != seat.deadline:
            game.version += 1  # the page shows the deadline, the calendar feed too
            game.save(update_fields=["version"])
        deadlines.deadlines_set([(game, seat, deadline)])
    return seat


# --- give time ----------------------------------------------------------------------------------


def seats_out(game: Game) -> set[int]:
    """The seats that resigned or ran out of time in a game that goes on without them."""
    if game.state is None:
        return set()
    return set(get_engine(game.kind).seats_left(game.state))


def time_give(*, game_id: int, user: User, seat_index: int) -> Seat:
    """The player gives the opponent in `seat_index` one more day on the clock of the turn it
    is playing (`deadlines.GIFT`, counted by that seat's clock), at most once in each turn of
    the game (its ply). The deadline moves through `deadlines_set`, like every deadline; the
    gift goes in the game's `clock_events`, shown in its log and record."""
    with transaction.atomic():
        game = game_locked(game_id)
        seats = list(game.seats.all())
        giver = next((s for s in seats if s.user_id == user.pk), None)
        if giver is None:
            raise GameError("Only a player of this game can give time.")
        if game.clock_duration is None:
            raise GameError("A live Maze Race keeps its own clock: no time can be given.")
        if game.status != Game.Status.ACTIVE:
            raise GameError("The game is not in progress: no clock is running.")
        if giver.index in seats_out(game):
            raise GameError("You are out of this game: you cannot give time.")
        seat = next((s for s in seats if s.index == seat_index), None)
        if seat is None:
            raise GameError("There is no such seat in this game.")
        if seat == giver:
            raise GameError("You cannot give time to yourself.")
        if seat.bot:
            raise GameError("A bot needs no more time: it plays as soon as it is its turn.")
        if seat.deadline is None:
            raise GameError(
                f"{seat.name}'s clock is not running: you can give time only to a player to move."
            )
        if seat.deadline <= clock.now():
            raise GameError(f"{seat.name}'s time has run out already.")
        if any(
            e.get("kind") == GIFT_KIND and e.get("by") == giver.index and e.get("ply") == game.ply
            for e in game.clock_events
        ):
            raise GameError(
                "You have already given time in this turn. You can give more after the next move."
            )
        zone = deadlines.seat_zones(game, [seat]).get(seat.index)
        deadline = clock.clock_add(seat.deadline, deadlines.GIFT, zone)
        game.clock_events = [
            *game.clock_events,
            {
                "at": clock.now().isoformat(),
                "seat": seat.index,
                "kind": GIFT_KIND,
                "by": giver.index,
                "ply": game.ply,
                "days": deadlines.GIFT.days,
            },
        ]
        game.version += 1
        game.save(update_fields=["clock_events", "version"])
        deadlines.deadlines_set([(game, seat, deadline)], zones={seat.pk: zone})
    return seat


GIFT_KIND = "gift"


# For callers that drive bots themselves (selfplay, tests): no bot turn is queued meanwhile.
bot_tasks_paused = pacing.bot_tasks_paused
