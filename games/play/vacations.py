"""Vacations (issue 14): a registered player's allowance of days, and the vacation that stops
their turn-based clocks. One source of truth stays one: a vacation only moves the deadlines of
the player's seats, through `deadlines.deadlines_set`, and the sweep keeps reading
`Seat.deadline` alone.

- Start at `s`, planned to end at `u`: each of their seats to move gets its deadline pushed
  forward by `u - s` (with weekends off, the clock time left at `s` counted on from `u`); a
  turn that starts during the vacation gets its deadline counted from `u`
  (`deadlines.turn_deadlines`).
- Return early at `r` (the account page, or a move): each of their deadlines is pulled back by
  the part not used, `u - r` (with weekends off, the clock time left at `u` counted on from
  `r`); a clock that had run out gets a day (RETURN_GRACE), at most up to its deadline of
  before. The days of the vacation were taken from the allowance when it
  started; the days not begun are given back (a day is 24 hours from the start; each day or
  part of one counts).
- Automatic vacation: when a seat's clock would run out and its player has days left, a
  vacation as long as the days left starts instead of the timeout (`play.core.seats_time_out`),
  with one mail; when the days are gone, the clock runs out again and the seat times out.

Every start and early end is written as a ClockEvent in each of the player's running games, so
the record lists it (`clock_events`) and `manage.py verify` checks timeouts against it.

The allowance: 14 days at first, one more for every week played (a week, Monday to Sunday in
UTC, with at least one move), once it is over, up to 30. Weeks are counted when the allowance is
read or spent (`vacation_for`), which gives what counting each week as it ends would give: the
week under way is not counted yet."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib.auth.models import User
from django.db import OperationalError, connections, router, transaction
from django.db.models import F
from django.db.models.functions import TruncWeek

from games import clock
from games.mail import notices, preferences
from games.models import Clock, ClockEvent, Game, Move, Profile, Seat, Vacation
from games.play import deadlines

DAY = timedelta(days=1)
FIRST_DAYS = 14
MAX_DAYS = 30
# Back early, a clock that had run out when the vacation began has this much to move in.
RETURN_GRACE = timedelta(days=1)
# A return date's vacation may be an hour longer than its days when the clocks go back.
DST_SLACK = timedelta(hours=1)
LOCK_NOT_AVAILABLE = "55P03"
GUEST_REFUSED = "Guests have no vacation days: claim your account to get some."


class VacationError(Exception):
    """A vacation the site refuses. `str(exc)` is a sentence for the player; nothing changed."""


class VacationTooLong(VacationError):
    """A return date further than the player's vacation days reach: the date's error."""


class VacationBusy(VacationError):
    """One of the player's games was locked for longer than GAME_LOCK_TIMEOUT_MS."""


# --- reading ------------------------------------------------------------------------------------


def is_registered(user: User) -> bool:
    """Guests have no vacation allowance."""
    if not user.is_authenticated:
        return False
    profile = Profile.objects.filter(user_id=user.pk).only("is_guest").first()
    return profile is None or not profile.is_guest


def vacation_for(user: User, *, now: datetime | None = None, lock: bool = False) -> Vacation:
    """The player's allowance with the weeks played so far counted in (in memory: the caller
    saves it when it changes something). `lock`: the row is made if missing and locked."""
    now = now or clock.now()
    if lock:
        Vacation.objects.get_or_create(user_id=user.pk)
        vacation = Vacation.objects.select_for_update().get(user_id=user.pk)
    else:
        found = Vacation.objects.filter(user_id=user.pk).first()
        vacation = found or Vacation(user_id=user.pk)
    _weeks_count(vacation, user, now)
    return vacation


def week_start(at: datetime) -> datetime:
    """Monday 00:00 UTC of the week `at` is in."""
    day = at.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return day - timedelta(days=day.weekday())


def _weeks_count(vacation: Vacation, user: User, now: datetime) -> None:
    """Add a day for each week with a move of theirs that is over and not counted yet (up to
    MAX_DAYS). The week under way counts once it ends: a week is played when it is over."""
    since = vacation.weeks_counted_to or week_start(user.date_joined)
    moves = (
        Move.objects.filter(
            at__gte=since,
            at__lt=week_start(now),
            game__seats__user_id=user.pk,
            game__seats__index=F("seat"),
        )
        .exclude(move__has_key="timeout")
        .annotate(week=TruncWeek("at", tzinfo=UTC))
    )
    # No ordering: Move.Meta.ordering would put game and ply into the DISTINCT.
    weeks = list(moves.order_by().values_list("week", flat=True).distinct())
    if not weeks:
        return
    vacation.days_left = min(MAX_DAYS, vacation.days_left + len(weeks))
    vacation.weeks_counted_to = week_start(max(weeks)) + timedelta(days=7)


def on_vacation_until(user: User | None, now: datetime) -> datetime | None:
    """When this player's vacation ends, if they are on one now; read from `user.vacation`
    (no query when the seats were read with `select_related("user__vacation")`)."""
    if user is None:
        return None
    vacation: Vacation | None = getattr(user, "vacation", None)
    if vacation is None or not vacation.on_vacation(now):
        return None
    return vacation.until


def until_for(return_on: date, zone: tzinfo) -> datetime:
    """A return date's end of vacation: the start of that day in the player's time zone."""
    return datetime.combine(return_on, time(), tzinfo=zone)


def days_for(*, until: datetime, now: datetime) -> int:
    """The days a vacation from now until then takes from the allowance: each day or part of
    one, a day being 24 hours (an hour more when the clocks go back)."""
    return max(1, math.ceil((until - now - DST_SLACK) / DAY))


def days_used(vacation: Vacation, now: datetime) -> int:
    assert vacation.started_at is not None
    return min(vacation.days_planned, max(1, math.ceil((now - vacation.started_at) / DAY)))


# --- starting and ending ------------------------------------------------------------------------


def vacation_start(
    *,
    user: User,
    until: datetime | None = None,
    automatic: bool = False,
    now: datetime | None = None,
    seats_known: Sequence[Seat] = (),
) -> Vacation:
    """Start a vacation now, until `until` (None: as long as the days left). Refused
    (VacationError) for a guest, a player on vacation already, with no days left, a return
    that is not in the future or needs more days than are left. Opens its own transaction
    (or joins the caller's, which then holds some of the games' locks: the sweep).
    `seats_known`: seat rows the caller holds, updated in memory too."""
    now = now or clock.now()
    if not is_registered(user):
        raise VacationError(GUEST_REFUSED)
    with transaction.atomic():
        games = _games_locked(user)
        vacation = vacation_for(user, now=now, lock=True)
        if vacation.on_vacation(now):
            raise VacationError("You are on vacation already.")
        if vacation.days_left < 1:
            raise VacationError("You have no vacation days left.")
        if until is None:
            days = vacation.days_left
            until = now + days * DAY
        else:
            if until <= now:
                raise VacationError("Choose a return date after today.")
            days = days_for(until=until, now=now)
            if days > vacation.days_left:
                raise VacationTooLong(
                    f"That is {days} days of vacation, and you have {vacation.days_left} left."
                )
        vacation.started_at = now
        vacation.until = until
        vacation.days_planned = days
        vacation.days_left -= days
        vacation.was_automatic = automatic
        vacation.save()
        _deadlines_shift(
            user, games, paused=now, resumes=until, seats_known=seats_known, start=True
        )
        ClockEvent.objects.bulk_create(
            ClockEvent(
                game=game,
                seat=index,
                kind=ClockEvent.Kind.VACATION_START,
                at=now,
                ply=game.ply,
                data={"until": until.isoformat(), "automatic": automatic},
            )
            for game, index in games
        )
        _versions_bump(games)
    return vacation


def vacation_end(*, user: User, now: datetime | None = None) -> Vacation | None:
    """End the player's vacation now, if they are on one: their deadlines are pulled back by
    the part not used, and the days not begun go back to the allowance. Returns the row, or
    None if they were not on vacation. Opens its own transaction (or joins the caller's)."""
    now = now or clock.now()
    with transaction.atomic():
        found = Vacation.objects.filter(user_id=user.pk).first()
        if found is None or not found.on_vacation(now):
            return None
        games = _games_locked(user)
        vacation = vacation_for(user, now=now, lock=True)
        if not vacation.on_vacation(now):
            return None
        assert vacation.until is not None and vacation.started_at is not None
        planned = vacation.until
        used = days_used(vacation, now)
        vacation.days_left = min(MAX_DAYS, vacation.days_left + vacation.days_planned - used)
        started = vacation.started_at
        vacation.until = now
        vacation.days_planned = used
        vacation.save()
        _deadlines_shift(user, games, paused=planned, resumes=now)
        had_start = set(
            ClockEvent.objects.filter(
                game_id__in=[g.pk for g, _ in games],
                kind=ClockEvent.Kind.VACATION_START,
                at__gte=started,
            ).values_list("game_id", "seat")
        )
        ClockEvent.objects.bulk_create(
            ClockEvent(
                game=game, seat=index, kind=ClockEvent.Kind.VACATION_END, at=now, ply=game.ply
            )
            for game, index in games
            if (game.pk, index) in had_start
        )
        _versions_bump(games)
    return vacation


def automatic_vacation(*, game: Game, seat: Seat, now: datetime) -> bool:
    """Instead of timing this seat out (its deadline has passed): start an automatic vacation
    if its player wants one and has days left, with a mail saying so. Returns whether the seat
    is on vacation now, its deadline past the vacation (one started, here or for another of the
    player's seats in the same batch). The caller (the sweep's timeout path) holds this game's
    lock."""
    if seat.user_id is None or seat.bot:
        return False
    user = seat.user
    assert user is not None
    profile = getattr(user, "profile", None)
    if profile is not None and profile.is_guest:
        return False
    # Read with the seats (`select_related("user__vacation")`): no query for a player who
    # turned it off or is away already, so a batch of timeouts costs what it cost.
    stored: Vacation | None = getattr(user, "vacation", None)
    if stored is not None and (not stored.automatic or stored.on_vacation(now)):
        return False
    if (
        stored is not None
        and stored.days_left < 1
        and stored.weeks_counted_to is not None
        and stored.weeks_counted_to >= week_start(now)
    ):
        return False  # last week's day is counted already, and no other week has ended
    found = vacation_for(user, now=now)
    if found.on_vacation(now):
        # Started for another of the player's seats in this batch (the seats were read before
        # it): it moved this seat's deadline too, which the database has.
        moved = Seat.objects.filter(pk=seat.pk).values_list("deadline", flat=True).first()
        if moved is None or moved <= now:
            return False
        game.refresh_from_db(fields=["version"])
        return True
    if not found.automatic or found.days_left < 1:
        return False
    try:
        with transaction.atomic():
            vacation_start(user=user, automatic=True, now=now, seats_known=[seat])
    except VacationBusy:
        raise  # the sweep leaves the seat for its next run
    except VacationError:
        return False
    notices.vacation_started(game=game, seat=seat)
    # The vacation bumped the game's version in the database: the caller's row follows, so
    # that a later change to it in the same batch does not write an older version back.
    game.refresh_from_db(fields=["version"])
    return True


def automatic_set(*, user: User, automatic: bool) -> Vacation:
    if not is_registered(user):
        raise VacationError(GUEST_REFUSED)
    with transaction.atomic():
        vacation = vacation_for(user, lock=True)
        vacation.automatic = automatic
        vacation.save()
    return vacation


# --- inside the locks ---------------------------------------------------------------------------


def _games_locked(user: User) -> list[tuple[Game, int]]:
    """The player's running games with a clock of days, locked in id order (the way every
    vacation takes them, so two never wait for each other in a circle), with their seat
    index. The wait is bounded like a move's (GAME_LOCK_TIMEOUT_MS)."""
    seat_of = dict(
        Seat.objects.filter(user_id=user.pk, game__status=Game.Status.ACTIVE)
        .exclude(game__clock=Clock.LIVE)
        .values_list("game_id", "index")
    )
    if not seat_of:
        return []
    connection = connections[router.db_for_write(Game)]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT set_config('lock_timeout', %s, true)",
                [f"{int(settings.GAME_LOCK_TIMEOUT_MS)}ms"],
            )
    try:
        games = list(
            Game.objects.select_for_update()
            .filter(pk__in=seat_of, status=Game.Status.ACTIVE)
            .defer("state", "seed")
            .order_by("pk")
        )
    except OperationalError as exc:
        if getattr(exc.__cause__, "sqlstate", None) == LOCK_NOT_AVAILABLE:
            raise VacationBusy(
                "One of your games is busy: a move is being played. Try again in a moment."
            ) from exc
        raise
    return [(game, seat_of[game.pk]) for game in games]


def _deadlines_shift(
    user: User,
    games: list[tuple[Game, int]],
    *,
    paused: datetime,
    resumes: datetime,
    seats_known: Sequence[Seat] = (),
    start: bool = False,
) -> None:
    """Move the deadline of each of the player's seats to move in these games so that the
    clock time it had left at `paused` is left at `resumes`: by `resumes - paused` for a clock
    that always runs, counted on the player's clock in a game with weekends off (so that the
    weekends in between are neither spent nor counted twice). A start pauses now and resumes at
    the return; an early return pauses at the planned return and resumes now. At a `start`, a
    deadline already past counts as now: its clock stopped with nothing left, and runs out when
    the vacation ends."""
    by_id = {game.pk: game for game, _ in games}
    known = {seat.pk: seat for seat in seats_known}
    seats = Seat.objects.filter(
        user_id=user.pk, game_id__in=by_id, deadline__isnull=False
    ).order_by("game_id")
    # The player's zone, read only if a game has weekends off (`deadlines.seat_zones`).
    own_zone: ZoneInfo | None = None
    if any(game.clock_options.get("weekends_off") for game in by_id.values()):
        own_zone = preferences.user_zone(user.pk)
    changes = []
    zones: dict[int, ZoneInfo | None] = {}
    for found in seats:
        seat = known.get(found.pk, found)  # read under the same locks: the same deadline
        game = by_id[found.game_id]
        zone = own_zone if game.clock_options.get("weekends_off") else None
        assert found.deadline is not None
        base = max(found.deadline, paused) if start else found.deadline
        left = clock.clock_between(paused, base, zone)
        deadline = clock.clock_add(resumes, left, zone)
        if not start and left <= timedelta(0):
            # A clock that had run out (an automatic vacation saved it) would run out again
            # at the return: it gets a day to move in, never past where the vacation had it.
            deadline = min(clock.clock_add(resumes, RETURN_GRACE, zone), found.deadline)
        changes.append((game, seat, deadline))
        zones[seat.pk] = zone
    deadlines.deadlines_set(changes, zones=zones)


def _versions_bump(games: list[tuple[Game, int]]) -> None:
    """Viewers of these games see the change at their next poll ("on vacation until ...")."""
    if games:
        Game.objects.filter(pk__in=[g.pk for g, _ in games]).update(version=F("version") + 1)
        for game, _ in games:
            game.version += 1
