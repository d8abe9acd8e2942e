"""Reads for pages: each a fixed number of queries, whatever the number of games."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Prefetch, Q, QuerySet

from games import clock
from games.archive import reads
from games.engines import get_engine
from games.models import Clock, Game, Seat, seat_name, vacation_now
from games.ui import wording
from mazesite.dbrouter import read_connection

LOBBY_LIMIT = 50


def _seats() -> QuerySet[Seat]:
    """Seats with their person (and their vacation), or the challenged player a seat is kept
    for."""
    return Seat.objects.select_related("user", "user__vacation", "reserved_for").order_by("index")


def _with_seats(games: QuerySet[Game]) -> QuerySet[Game]:
    return games.defer("state", "seed").prefetch_related(Prefetch("seats", queryset=_seats()))


# --- the lobby's lists, read as plain rows -------------------------------------------------------
#
# Written out as the archive's pages are (reads.py), each game with its seats as one JSON array:
# the ORM's building of these statements and of some 300 model instances a request cost the lobby
# more than the rest of its page.


@dataclass(slots=True)
class SeatLine:
    """A seat as the lobby's lists show it."""

    index: int
    user_id: int | None
    name: str  # models.seat_name
    url: str  # the player's page; "" for a bot, an open seat or one kept for a challenged player
    is_open: bool
    kept_for: str | None  # the challenged player's name, while the seat is kept for them
    away: datetime | None  # the end of its player's vacation, if they are on one now
    out: bool  # it left a game that goes on without it (resigned or timed out)


@dataclass(slots=True)
class GameLine:
    """A game as the lobby's lists show it, its seats in order."""

    id: int
    kind: str
    clock: str
    status: str
    seats: list[SeatLine]

    @property
    def kind_title(self) -> str:
        return reads.KIND_TITLES[self.kind]

    @property
    def clock_duration(self) -> timedelta | None:
        return Clock.duration(self.clock)


# A game's seats as one JSON array of [index, user, bot, player, kept for, its player's
# vacation's start and end, out].
_SEAT_COLUMNS = (
    f's."index", s.user_id, s.bot, {reads.username_of("s.user_id")}, '
    f"CASE WHEN s.user_id IS NULL THEN {reads.username_of('s.reserved_for_id')} END, "
    "v.started_at, v.until, s.out_at IS NOT NULL"
)
_SEATS_FROM = """games_seat s
LEFT JOIN games_vacation v ON v.user_id = s.user_id
WHERE s.game_id = g.id"""


def _game_columns() -> str:
    seats = f"SELECT {reads.json_arrays(_SEAT_COLUMNS)} FROM {_SEATS_FROM}"
    return f"g.id, g.kind, g.clock, g.status, ({seats})"


def _game_line(
    now: datetime, game_id: int, kind: str, clock_: str, status: str, seats_json: str
) -> GameLine:
    seats = []
    for index, user_id, bot, player, kept_for, started, until, out in sorted(
        json.loads(seats_json)
    ):
        seats.append(
            SeatLine(
                index=index,
                user_id=user_id,
                name=seat_name(bot=bot, player=player, kept_for=kept_for),
                url=reads.player_url(player) if player is not None and not bot else "",
                is_open=user_id is None and not bot and kept_for is None,
                kept_for=kept_for,
                away=vacation_now(reads.aware(started), reads.aware(until), now),
                out=bool(out),
            )
        )
    return GameLine(id=game_id, kind=kind, clock=clock_, status=status, seats=seats)


@dataclass(frozen=True)
class LobbyLists:
    """The lobby's public lists: at most LOBBY_LIMIT games waiting for players, the longest
    waiting first (the index game_status_created), and at most LOBBY_LIMIT in progress, the
    latest started first (game_active_started)."""

    open: list[GameLine]
    active: list[GameLine]


# Only games anyone may join are listed as open: not a private game (an invite link), nor a
# challenge with every seat kept for its players. Each list numbered in its own order and the two
# joined by UNION ALL, so that they come back in a set order on both back ends (as
# reads._game_lists).
_LOBBY_SQL = f"""
SELECT 0 AS list, o.* FROM (
  SELECT row_number() OVER (ORDER BY g.created_at) AS n, {{columns}} FROM games_game g
  WHERE g.status = %(open)s AND g.invite_token = ''
    AND EXISTS (SELECT 1 FROM games_seat e WHERE e.game_id = g.id AND e.user_id IS NULL
                AND e.bot = '' AND e.reserved_for_id IS NULL)
  ORDER BY g.created_at LIMIT {LOBBY_LIMIT}) o
UNION ALL
SELECT 1 AS list, a.* FROM (
  SELECT row_number() OVER (ORDER BY g.started_at DESC) AS n, {{columns}} FROM games_game g
  WHERE g.status = %(active)s
  ORDER BY g.started_at DESC LIMIT {LOBBY_LIMIT}) a
ORDER BY 1, 2
"""


def lobby_lists() -> LobbyLists:
    """The lobby's open games and games in progress, with their seats: one query."""
    found: tuple[list[GameLine], list[GameLine]] = ([], [])
    now = clock.now()
    params = {"open": Game.Status.OPEN, "active": Game.Status.ACTIVE}
    with read_connection().cursor() as cursor:
        cursor.execute(_LOBBY_SQL.format(columns=_game_columns()), params)
        for list_index, _, *columns in cursor.fetchall():
            found[list_index].append(_game_line(now, *columns))
    return LobbyLists(open=found[0], active=found[1])


def games_of(user: User, games: list[GameLine]) -> set[int]:
    """The ids of those games in which the user has a seat."""
    if not user.is_authenticated:
        return set()
    return {g.id for g in games if any(s.user_id == user.pk for s in g.seats)}


@dataclass(frozen=True)
class YourGame:
    game: GameLine
    seat: int  # the viewer's seat's index
    your_move: bool
    left: timedelta | None
    out: bool  # the viewer left the game (resigned or timed out); it goes on without them

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


# Your move: a clock runs for you, or a race without a clock where you are still in the maze
# (the engine has the last word on the rows shown: its state is read for those alone). The
# statuses, the clock and the page's limit and offset are written into the statement, the
# user alone a parameter: with them as parameters PostgreSQL planned the prepared statement
# afresh for every execution (its generic plan's estimate never won): 0.77 ms of PostgreSQL's
# CPU a run instead of 0.43.
_ACTIVE, _OPEN, _LIVE = (f"'{v}'" for v in (Game.Status.ACTIVE, Game.Status.OPEN, Clock.LIVE))
_YOUR_GAMES_SQL = f"""
SELECT {{columns}}, me."index", me.deadline, me.out_at IS NOT NULL,
       CASE WHEN g.status = {_ACTIVE} AND g.clock = {_LIVE} THEN g.state END,
       g.clock_options, (SELECT p.time_zone FROM games_profile p WHERE p.user_id = %(user)s)
FROM games_seat me
JOIN games_game g ON g.id = me.game_id
WHERE me.user_id = %(user)s AND me.finished_at IS NULL AND g.status IN ({_OPEN}, {_ACTIVE})
ORDER BY CASE WHEN me.deadline IS NOT NULL THEN 0
              WHEN g.status = {_ACTIVE} AND g.clock = {_LIVE} THEN 1
              WHEN g.status = {_ACTIVE} THEN 2
              ELSE 3 END,
         me.deadline ASC NULLS LAST, g.started_at DESC NULLS LAST, g.created_at DESC, g.id DESC
LIMIT {YOUR_GAMES_PAGE + 1} OFFSET {{offset:d}}
"""


def your_games(user: User, page: int = 1) -> YourGames:
    """Your open and running games, a page of YOUR_GAMES_PAGE: those where it is your move
    first, least time left first; then the other games in progress, the latest started first;
    then the games waiting for players. One query, along the index seat_user_finished (the seats
    of games not over)."""
    if not user.is_authenticated:
        return YourGames(rows=[], number=1, has_next=False)
    now = clock.now()
    page = max(1, page)
    sql = _YOUR_GAMES_SQL.format(columns=_game_columns(), offset=(page - 1) * YOUR_GAMES_PAGE)
    with read_connection().cursor() as cursor:
        cursor.execute(sql, {"user": user.pk})
        found = cursor.fetchall()
    rows = []
    for *columns, index, deadline_at, out, race_state, options, zone in found[:YOUR_GAMES_PAGE]:
        game = _game_line(now, *columns)
        deadline = reads.aware(deadline_at)
        # A clock with weekends off counts the time left on it, as the game page does.
        weekends_off = (json.loads(options) if isinstance(options, str) else options or {}).get(
            "weekends_off"
        )
        in_race = race_state is not None and index in get_engine(game.kind).to_move(
            json.loads(race_state)
        )
        rows.append(
            YourGame(
                game=game,
                seat=index,
                your_move=deadline is not None or in_race,
                left=clock.clock_between(
                    now, deadline, clock.person_zone(zone) if weekends_off else None
                )
                if deadline
                else None,
                out=out,
            )
        )
    far = datetime.max.replace(tzinfo=now.tzinfo) - now
    rows.sort(key=lambda r: (not r.your_move, r.left if r.left is not None else far))
    return YourGames(rows=rows, number=page, has_next=len(found) > YOUR_GAMES_PAGE)


def running_games_count(user: User) -> int:
    """How many open or running games the user has a seat in."""
    return Seat.objects.filter(
        user=user, game__status__in=[Game.Status.OPEN, Game.Status.ACTIVE]
    ).count()


def game_for_page(game_id: int, *, with_moves: bool = True) -> Game | None:
    related: list[str | Prefetch[Any]] = [Prefetch("seats", queryset=_seats())]
    if with_moves:
        related.append("moves")
    return Game.objects.filter(pk=game_id).prefetch_related(*related).first()


# game_version's statement, written out: every open game page asks it every few seconds, and
# the ORM's building of it cost twice its round trip (a third of a poll that finds nothing new).
GAME_VERSION_SQL = (
    f"SELECT version, status, invite_token <> '' FROM {Game._meta.db_table} WHERE id = %s"
)


def game_version(game_id: int) -> tuple[int, str, bool] | None:
    """The cheap read behind polling: one row by primary key, its version, its status and
    whether it is private (an invite link)."""
    with read_connection().cursor() as cursor:
        cursor.execute(GAME_VERSION_SQL, [game_id])
        row = cursor.fetchone()
    return (row[0], row[1], bool(row[2])) if row else None


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
    still in (as in "your games")."""
    if not user.is_authenticated:
        return 0
    if counts is None:
        with read_connection().cursor() as cursor:
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


@dataclass(slots=True)
class Challenge:
    """A game waiting for the viewer's answer: a challenge, or a rematch offer."""

    game_id: int
    kind: str
    rematch: bool
    by: str | None  # who made the game

    @property
    def kind_title(self) -> str:
        return reads.KIND_TITLES[self.kind]


_CHALLENGES_SQL = """
SELECT g.id, g.kind, g.rematch_of_id IS NOT NULL, u.username
FROM games_seat s
JOIN games_game g ON g.id = s.game_id
LEFT JOIN auth_user u ON u.id = g.created_by_id
WHERE s.reserved_for_id = %(user)s AND s.user_id IS NULL AND g.status = %(open)s
ORDER BY g.created_at DESC, g.id DESC
LIMIT %(limit)s
"""


def challenges_for(user: User) -> list[Challenge]:
    """The games with a seat kept for this user, waiting for them (challenges and rematch
    offers), the newest first, with who made each: one query."""
    if not user.is_authenticated:
        return []
    params: dict[str, Any] = {"user": user.pk, "open": Game.Status.OPEN, "limit": CHALLENGES_LIMIT}
    with read_connection().cursor() as cursor:
        cursor.execute(_CHALLENGES_SQL, params)
        return [
            Challenge(game_id=game_id, kind=kind, rematch=bool(rematch), by=by)
            for game_id, kind, rematch, by in cursor.fetchall()
        ]


def rematch_of(game: Game) -> Game | None:
    """The rematch offered after this game, with its seats, or None (a finished game's page)."""
    return _with_seats(Game.objects.filter(rematch_of=game)).first()
