"""Reads for pages: each a fixed number of queries, whatever the number of games."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import connections, router
from django.db.models import Case, Exists, F, OuterRef, Prefetch, Q, QuerySet, Value, When

from games import clock
from games.engines import get_engine
from games.models import Clock, Game, Seat
from games.ui import wording

LOBBY_LIMIT = 50


def _seats() -> QuerySet[Seat]:
    """Seats with their person (and their vacation), or the challenged player a seat is kept
    for."""
    return Seat.objects.select_related("user", "user__vacation", "reserved_for").order_by("index")


def _with_seats(games: QuerySet[Game]) -> QuerySet[Game]:
    return games.defer("state", "seed").prefetch_related(Prefetch("seats", queryset=_seats()))


def open_games() -> list[Game]:
    """At most LOBBY_LIMIT games waiting for players, the longest waiting first (the index
    game_status_created). Only games anyone may join: a private game (an invite link) or a
    challenge with every seat kept for its players is not listed."""
    open_seat = Seat.objects.filter(
        game=OuterRef("pk"), user__isnull=True, bot="", reserved_for__isnull=True
    )
    return list(
        _with_seats(
            Game.objects.filter(status=Game.Status.OPEN, invite_token="")
            .filter(Exists(open_seat))
            .order_by("created_at")
        )[:LOBBY_LIMIT]
    )


def active_games() -> list[Game]:
    """At most LOBBY_LIMIT games in progress, the latest started first (game_active_started)."""
    return list(
        _with_seats(Game.objects.filter(status=Game.Status.ACTIVE).order_by("-started_at"))[
            :LOBBY_LIMIT
        ]
    )


def games_of(user: User, games: list[Game]) -> set[int]:
    """The ids of those games (read with their seats) in which the user has a seat."""
    if not user.is_authenticated:
        return set()
    return {g.pk for g in games if any(s.user_id == user.pk for s in g.seats.all())}


@dataclass(frozen=True)
class YourGame:
    game: Game
    seat: Seat
    your_move: bool
    left: timedelta | None

    @property
    def race(self) -> bool:
        return wording.steps_apart(self.game.kind)

    @property
    def left_text(self) -> str:
        return clock.format_left(self.left) if self.left is not None else ""


YOUR_GAMES_PAGE = 20


@dataclass(frozen=True)
class YourGames:
    """One page of a player's open and running games (`number` from 1), and whether there are
    more after it."""

    rows: list[YourGame]
    number: int
    has_next: bool

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    def __bool__(self) -> bool:
        return bool(self.rows)

    def __iter__(self) -> Any:
        return iter(self.rows)


def your_games(user: User, page: int = 1) -> YourGames:
    """Your open and running games, a page of YOUR_GAMES_PAGE: those where it is your move
    first, least time left first; then the other games in progress, the latest started first;
    then the games waiting for players. One query for the seats and their games (the index
    seat_user_finished: the seats of games not over), one for the seats of the page's games."""
    if not user.is_authenticated:
        return YourGames(rows=[], number=1, has_next=False)
    now = clock.now()
    page = max(1, page)
    start = (page - 1) * YOUR_GAMES_PAGE
    seats = list(
        Seat.objects.filter(
            user=user,
            finished_at__isnull=True,
            game__status__in=[Game.Status.OPEN, Game.Status.ACTIVE],
        )
        .select_related("game")
        .defer("game__seed")
        .annotate(
            # Your move: a clock runs for you, or a race without a clock where you are still in
            # the maze (the engine has the last word on the rows shown, _to_move_without_clock).
            urgent=Case(
                When(deadline__isnull=False, then=Value(0)),
                When(game__status=Game.Status.ACTIVE, game__clock=Clock.LIVE, then=Value(1)),
                When(game__status=Game.Status.ACTIVE, then=Value(2)),
                default=Value(3),
            )
        )
        .order_by(
            "urgent",
            F("deadline").asc(nulls_last=True),
            F("game__started_at").desc(nulls_last=True),
            "-game__created_at",
            "-game_id",
        )
        .prefetch_related(Prefetch("game__seats", queryset=_seats()))[
            start : start + YOUR_GAMES_PAGE + 1
        ]
    )
    rows = [
        YourGame(
            game=s.game,
            seat=s,
            your_move=s.deadline is not None or _to_move_without_clock(s),
            left=(s.deadline - now) if s.deadline else None,
        )
        for s in seats[:YOUR_GAMES_PAGE]
    ]
    far = datetime.max.replace(tzinfo=now.tzinfo) - now
    rows.sort(key=lambda r: (not r.your_move, r.left if r.left is not None else far))
    return YourGames(rows=rows, number=page, has_next=len(seats) > YOUR_GAMES_PAGE)


def running_games_count(user: User) -> int:
    """How many open or running games the user has a seat in."""
    return Seat.objects.filter(
        user=user, game__status__in=[Game.Status.OPEN, Game.Status.ACTIVE]
    ).count()


def _to_move_without_clock(seat: Seat) -> bool:
    game = seat.game
    if game.status != Game.Status.ACTIVE or game.state is None or game.clock_duration:
        return False
    return seat.index in get_engine(game.kind).to_move(game.state)


def game_for_page(game_id: int, *, with_moves: bool = True) -> Game | None:
    related: list[str | Prefetch[Any]] = [Prefetch("seats", queryset=_seats())]
    if with_moves:
        related.append("moves")
    return Game.objects.filter(pk=game_id).prefetch_related(*related).first()


# game_version's statement, written out: every open game page asks it every few seconds, and
# the ORM's building of it cost twice its round trip (a third of a poll that finds nothing new).
GAME_VERSION_SQL = f"SELECT version, status FROM {Game._meta.db_table} WHERE id = %s"


def game_version(game_id: int) -> tuple[int, str] | None:
    """The cheap read behind polling: one row by primary key, two columns."""
    with connections[router.db_for_read(Game)].cursor() as cursor:
        cursor.execute(GAME_VERSION_SQL, [game_id])
        row = cursor.fetchone()
    return (row[0], row[1]) if row else None


# your_move_count's first query, written out: every signed-in page's header asks it, and the
# ORM's building of the statement cost about ten times its round trip.
YOUR_MOVE_COUNT_SQL = """
SELECT count(*) FILTER (WHERE s.deadline IS NOT NULL) AS clocks,
       count(*) FILTER (WHERE s.deadline IS NULL AND g.status = %s AND g.clock = %s) AS live_races
FROM games_seat s
JOIN games_game g ON g.id = s.game_id
WHERE s.user_id = %s AND s.finished_at IS NULL
"""


def your_move_count_params(user_id: int) -> list[str | int]:
    """YOUR_MOVE_COUNT_SQL's parameters for this user."""
    return [Game.Status.ACTIVE, Clock.LIVE, user_id]


def your_move_count(user: User, counts: tuple[int, int] | None = None) -> int:
    """How many games wait for the user's move: their seats with a clock running, and the live
    races where they are still in the maze (or the race waits for their Ready). One query (the
    index seat_user_finished: the user's seats of games not over), none if its two `counts`
    were read with another statement (as game_cache.page_facts does), and a second only while the
    user has a seat in a live race running: a live race has no clock, so the engine says who is
    still in (as in "your games", _to_move_without_clock)."""
    if not user.is_authenticated:
        return 0
    if counts is None:
        with connections[router.db_for_read(Seat)].cursor() as cursor:
            cursor.execute(YOUR_MOVE_COUNT_SQL, your_move_count_params(user.pk))
            counts = cursor.fetchone()
    clocks, live_races = counts
    found: int = clocks
    if live_races:
        seats = Seat.objects.filter(user=user, finished_at__isnull=True)
        live = Q(deadline__isnull=True, game__status=Game.Status.ACTIVE, game__clock=Clock.LIVE)
        races = seats.filter(live).values_list("index", "game__kind", "game__state")
        found += sum(
            1
            for index, kind, state in races
            if state is not None and index in get_engine(kind).to_move(state)
        )
    return found


CHALLENGES_LIMIT = 20


def challenges_for(user: User) -> list[Seat]:
    """The seats kept for this user in games waiting for them (challenges and rematch offers),
    the newest first, with who made each game: one query."""
    if not user.is_authenticated:
        return []
    return list(
        Seat.objects.filter(reserved_for=user, user__isnull=True, game__status=Game.Status.OPEN)
        .select_related("game", "game__created_by")
        .defer("game__state", "game__seed")
        .order_by("-game__created_at", "-game_id")[:CHALLENGES_LIMIT]
    )


def rematch_of(game: Game) -> Game | None:
    """The rematch offered after this game, with its seats, or None (a finished game's page)."""
    return _with_seats(Game.objects.filter(rematch_of=game)).first()
