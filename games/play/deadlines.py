"""The one write of `Seat.deadline` (`deadlines_set`) and the deadlines of a turn. The caller
holds the games' locks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from games import clock, statements
from games.engines.base import Engine
from games.mail import notices
from games.models import ClockEvent, Game, Profile, Seat, Vacation


def seats_kept(game: Game) -> list[Seat] | None:
    """The seats `play.core.seats_read` kept on `game`, or None."""
    cache = getattr(game, "_prefetched_objects_cache", {})
    return list(cache["seats"]) if "seats" in cache else None


def turn_deadlines(game: Game, engine: Engine, moved: int | None = None) -> None:
    """A seat to move keeps the deadline it has, or gets one; every other seat has none. A new
    deadline is the turn's start plus the per-move time plus the seat's bank left, counted by
    the seat's clock (`seat_zones`: weekends off); a seat whose turn ends has its bank
    recomputed from the clock time that was left (`clock.bank_after`). `moved`: the seat whose
    move this follows. In a game by turns, a seat that moved and is to move again starts a new
    turn (a Robot Maze Race's last set-up, then the first program); a race's runner keeps its
    one clock."""
    assert game.state is not None
    to_move = set(engine.to_move(game.state))
    duration = game.clock_duration
    now = clock.now()
    # The seats the move read (play.core.seats_read: their players' vacations with them), or
    # read now with the vacations: one query at most.
    seats = seats_kept(game)
    if seats is None:
        seats = list(game.seats.select_related("user__vacation"))
    zones = seat_zones(game, seats)
    changes: list[tuple[Game, Seat, datetime | None]] = []
    banked: list[Seat] = []
    renewed: set[int] = set()
    for seat in seats:
        zone = zones.get(seat.index)
        again = seat.index == moved and seat.index in to_move and not engine.SEATS_MOVE_APART
        turn_ends = seat.index not in to_move or again
        if turn_ends and seat.deadline is not None and seat.bank is not None and duration:
            # On vacation, the clock stopped at its start: what was left then is left at the
            # vacation's end, where the deadline was pushed.
            vacation = _vacation_now(seat, now)
            resumes = vacation.until if vacation is not None and vacation.until else now
            seat.bank = clock.bank_after(
                bank=seat.bank,
                left=clock.clock_between(resumes, seat.deadline, zone),
                full=bank_full(game),
                increment=BANK_INCREMENT,
            )
            banked.append(seat)
        if seat.index not in to_move:
            deadline = None
        elif seat.deadline is not None and not again:
            deadline = seat.deadline
        else:
            start = _turn_start(game, seat, now)
            deadline = clock.clock_add(start, game.turn_time(seat), zone) if duration else None
            if again:
                renewed.add(seat.pk)
        changes.append((game, seat, deadline))
    statements.rows_update(banked, ["bank"])
    deadlines_set(
        changes, zones={seat.pk: zones.get(seat.index) for seat in seats}, renewed=renewed
    )


# A move adds this to its seat's bank, up to the starting bank.
BANK_INCREMENT = timedelta(days=1)
# What a gift gives (`play.core.time_give`): one more day of clock time.
GIFT = timedelta(days=1)


def bank_full(game: Game) -> timedelta:
    """The starting bank of each person's seat in this game (zero: no bank)."""
    return timedelta(days=int(game.clock_options.get("bank_days", 0)))


def seat_zones(game: Game, seats: Sequence[Seat]) -> dict[int, ZoneInfo | None]:
    """Each person's seat's clock zone in a game with weekends off (their profile's time zone);
    {} otherwise, and a bot's clock always runs. One query, and only for such games."""
    if not game.clock_options.get("weekends_off"):
        return {}
    people = {s.user_id: s.index for s in seats if s.user_id is not None and not s.bot}
    names = dict(Profile.objects.filter(user_id__in=people).values_list("user_id", "time_zone"))
    return {index: clock.person_zone(names.get(user_id)) for user_id, index in people.items()}


def _turn_start(game: Game, seat: Seat, now: datetime) -> datetime:
    """When a turn starting now starts to run: at once, or when its player's vacation ends
    (games/play/vacations.py). A game that had no word of this vacation gets its start in its
    record's clock events."""
    vacation = _vacation_now(seat, now)
    if vacation is None:
        return now
    assert vacation.until is not None and vacation.started_at is not None
    start = ClockEvent.Kind.VACATION_START
    if not ClockEvent.objects.filter(
        game=game, seat=seat.index, kind=start, at__gte=vacation.started_at
    ).exists():
        ClockEvent.objects.create(
            game=game,
            seat=seat.index,
            kind=start,
            at=now,
            ply=game.ply,
            data={"until": vacation.until.isoformat(), "automatic": vacation.was_automatic},
        )
    return vacation.until


def _vacation_now(seat: Seat, now: datetime) -> Vacation | None:
    """The vacation this seat's player is on now, if any (read with the seats:
    `select_related("user__vacation")`)."""
    vacation: Vacation | None = getattr(seat.user, "vacation", None) if seat.user_id else None
    return vacation if vacation is not None and vacation.on_vacation(now) else None


def deadlines_set(
    changes: Sequence[tuple[Game, Seat, datetime | None]],
    zones: Mapping[int, ZoneInfo | None] | None = None,
    renewed: Set[int] = frozenset(),
) -> None:
    """The one write of `Seat.deadline`: each (game, seat, deadline) gives the seat a deadline
    (its turn starts), moves it, or takes it away (None: its turn is over). Whatever sets or
    moves a deadline (a turn with its bank and weekends off, the end of a game, the admin, a
    gift of time, and later a vacation) goes through here, so that the seat's reminder stays
    due a fifth of the turn's time before the deadline on the seat's clock
    (`mail.notices.reminder_time`); a turn that starts also gets its "your turn" mail. Seats
    whose deadline does not change are left alone; the others are changed in memory too.
    `zones`: the clocks' zones of the seats by seat id (`seat_zones`), where the caller has
    them; read here otherwise. The caller holds the games' locks (`seat_deadline_move` takes
    it, for a caller outside a transaction). `renewed`: the ids of seats whose turn ended and
    another began with this change (`turn_deadlines`): a new turn, with its own reminder and
    mail, though the seat had a deadline."""
    started: list[tuple[Game, Seat]] = []
    moved: list[tuple[Game, Seat]] = []
    ended: list[Seat] = []
    turned: list[Seat] = []  # renewed: their last turn's reminder goes
    for game, seat, deadline in changes:
        again = seat.pk in renewed and deadline is not None
        if deadline == seat.deadline and not again:
            continue
        if deadline is None:
            ended.append(seat)
        elif seat.deadline is None or again:
            started.append((game, seat))
            if seat.deadline is not None:
                turned.append(seat)
        else:
            moved.append((game, seat))
        seat.deadline = deadline
    statements.rows_update([*ended, *(s for _, s in started), *(s for _, s in moved)], ["deadline"])
    zone_of = _zones_known(started + moved, zones or {})
    for game, seat in moved:
        notices.deadline_moved(game=game, seat=seat, zone=zone_of[seat.pk])
    notices.turns_changed(
        ended=[*ended, *turned],
        started=[(game, seat, zone_of[seat.pk]) for game, seat in started],
    )


def _zones_known(
    pairs: Sequence[tuple[Game, Seat]], known: Mapping[int, ZoneInfo | None]
) -> dict[int, ZoneInfo | None]:
    """The clock zone of each of these seats by seat id: the caller's, or read (`seat_zones`,
    a query for each game with weekends off whose zones the caller did not give)."""
    zone_of: dict[int, ZoneInfo | None] = {}
    unknown: dict[int, tuple[Game, list[Seat]]] = {}
    for game, seat in pairs:
        if seat.pk in known:
            zone_of[seat.pk] = known[seat.pk]
        elif game.clock_options.get("weekends_off"):
            unknown.setdefault(game.pk, (game, []))[1].append(seat)
        else:
            zone_of[seat.pk] = None
    for game, seats in unknown.values():
        read = seat_zones(game, seats)
        zone_of.update((seat.pk, read.get(seat.index)) for seat in seats)
    return zone_of
