"""Reads behind the archive, the player pages and their feeds: finished games with filters that
combine (filters.py), paged by keyset on (finished_at, id), never OFFSET, so that a page deep
in a million games costs what the first one does; and the players' results per game (counted
as each game ends, results.py). Each function is a fixed number of queries."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from urllib.parse import quote, urlencode

from django.db import connection
from django.urls import reverse
from django.utils.dateparse import parse_datetime
from django.utils.functional import cached_property

from games.archive.filters import Filters
from games.models import Clock, Game, Seat, seat_name, users_named
from games.ui import colour
from games.ui.wording import ending
from games.web.inputs import ascii_int
from mazesite.dbrouter import read_connection

PAGE_SIZE = 25
FEED_SIZE = 50
RUNNING_LIMIT = 100
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def ordinal(place: int) -> str:
    suffix = "th" if 10 <= place % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(place % 10, "th")
    return f"{place}{suffix}"


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


# The pages' queries are written out, not built with the ORM, which takes longer to compile
# them than the database takes to run them (see bench/archive.py). They are put together from
# the fixed fragments below, every value a parameter, in the SQL that both PostgreSQL and SQLite
# (`make run`) read, but for the one aggregate each spells its own way: the rows of a subquery
# as one JSON array of arrays (as text), so that a game's seats come with the game, in one query.
JSON_ARRAYS = {
    "postgresql": "CAST(json_agg(json_build_array({})) AS text)",
    "sqlite": "json_group_array(json_array({}))",
}


def json_arrays(columns: str) -> str:
    """The aggregate of JSON_ARRAYS over `columns` (a comma-separated list), for the default
    connection's back end."""
    return JSON_ARRAYS[connection.vendor].format(columns)


def username_of(user_id: str) -> str:
    """The username of the user whose id is the column `user_id`, as SQL: read by primary key
    in a scalar subquery rather than joined, since with a join PostgreSQL's plan for a few
    hundred users scanned the whole user table for every game a list shows (the lobby's lists
    3.2-3.3 ms, 0.6 ms this way; fifty finished games of the archive 1.7-2.1 ms, 0.4 ms)."""
    return f"(SELECT u.username FROM auth_user u WHERE u.id = {user_id})"


# A game's columns as a list shows them: GAME_COLUMNS, then its seats as one JSON array of
# [index, bot, place, username, the challenged player it is kept for while nobody sits in it,
# whether they declined],
# so that a page is one query, not one for games and one for seats.
GAME_COLUMNS = ("id", "kind", "clock", "status", "ply", "result_reason", "finished_at")
_SEAT_COLUMNS = (
    f's."index", s.bot, s.place, {username_of("s.user_id")}, CASE WHEN s.user_id IS NULL'
    f" THEN {username_of('s.reserved_for_id')} END, s.declined_at IS NOT NULL"
)


def _game_columns() -> str:
    seats = f"SELECT {json_arrays(_SEAT_COLUMNS)} FROM games_seat s WHERE s.game_id = g.id"
    return ", ".join(f"g.{name}" for name in GAME_COLUMNS) + f", ({seats})"


def _game_conditions(filters: Filters, params: dict[str, Any]) -> list[str]:
    """The conditions on a game (`g`) for the filters on its kind, clock and bots."""
    where = []
    if filters.kind:
        where.append("g.kind = %(kind)s")
        params["kind"] = filters.kind
    if filters.clock:
        where.append("g.clock = %(clock)s")
        params["clock"] = filters.clock
    if filters.bots:
        with_bot = "EXISTS (SELECT 1 FROM games_seat b WHERE b.game_id = g.id AND b.bot <> '')"
        where.append(with_bot if filters.bots == "yes" else f"NOT {with_bot}")
    return where


def _db_datetime(value: datetime) -> Any:
    """A time as a parameter of a written-out statement (SQLite keeps text)."""
    return connection.ops.adapt_datetimefield_value(value)


def aware(value: datetime | str | None) -> datetime | None:
    """A time as read from the database, in UTC: SQLite gives naive text."""
    if isinstance(value, str):
        value = parse_datetime(value)
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _game_lists(params: dict[str, Any], *lists: tuple[str, str, str]) -> list[list[Row]]:
    """The rows of games read with _game_columns() for each (source and conditions, order,
    limit) given: one query for them all, each list numbered in its own order and the lot joined
    by UNION ALL, so that it comes back in a set order on both back ends."""
    selects = " UNION ALL ".join(
        f"SELECT {i} AS list, l{i}.* FROM (SELECT row_number() OVER (ORDER BY {order}) AS n, "
        f"{_game_columns()} FROM {source} ORDER BY {order} LIMIT {limit}) l{i}"
        for i, (source, order, limit) in enumerate(lists)
    )
    found: list[list[Row]] = [[] for _ in lists]
    with read_connection().cursor() as cursor:  # the replica's, where there is one
        cursor.execute(f"{selects} ORDER BY 1, 2", params)
        for list_index, _, *columns in cursor.fetchall():
            found[list_index].append(Row.of(columns))
    return found


# --- keyset pages ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Cursor:
    """A place in the list: the (finished_at, id) of a game. In the URL as `<µs>.<id>`, exact
    to the microsecond that PostgreSQL keeps."""

    at: datetime
    id: int

    @classmethod
    def of(cls, row: Row) -> Cursor:
        assert row.finished_at is not None  # a finished game's
        return cls(at=row.finished_at, id=row.id)

    @classmethod
    def parse(cls, token: str | None) -> Cursor | None:
        if not token:
            return None
        micros_text, _, pk_text = token.partition(".")
        micros, pk = ascii_int(micros_text, max_digits=18), ascii_int(pk_text, max_digits=18)
        if micros is None or pk is None:
            return None
        try:
            return cls(at=EPOCH + timedelta(microseconds=micros), id=pk)
        except OverflowError:
            return None

    @property
    def token(self) -> str:
        return f"{(self.at - EPOCH) // timedelta(microseconds=1)}.{self.id}"


KIND_TITLES = dict(Game.Kind.choices)
CLOCK_TEXT = {Clock.DAYS_3: "3 days", Clock.DAYS_30: "30 days", Clock.LIVE: "live"}


class Urls:
    """URL prefixes, reversed once rather than once per row."""

    @cached_property
    def game(self) -> str:
        return reverse("game", args=[0]).removesuffix("0/")

    @cached_property
    def player(self) -> str:
        return reverse("player", args=["x"]).removesuffix("x/")


URLS = Urls()


def player_url(username: str) -> str:
    """A player's page, as reverse() would give it (it quotes: guests' names have a space)."""
    return f"{URLS.player}{quote(username, safe='@+')}/"


def seat_url(seat: Seat) -> str:
    """The page of a seat's player (read with its user); "" for a bot or an open seat."""
    return player_url(seat.user.get_username()) if seat.user is not None and not seat.bot else ""


# Rows are made 25 to a page, and read-only by use: plain slotted classes, which are quicker to
# make than frozen ones.
@dataclass(slots=True)
class SeatRow:
    name: str
    bot: bool
    place: int | None
    place_text: str
    colour: int  # ui.colour(): the seat's data-colour
    url: str  # the player's page; "" for a bot or an open seat


@dataclass(slots=True)
class Row:
    """One game as a list shows it, every text ready to print."""

    id: int
    kind: str
    title: str
    clock_text: str
    status: str
    seats: list[SeatRow]
    ending: str
    moves: int
    finished_at: datetime | None
    finished_iso: str
    finished_text: str
    url: str
    replay_url: str

    @classmethod
    def of(cls, columns: Sequence[Any]) -> Row:
        """The row of a game read with _game_columns()."""
        game_id, kind, clock, status, ply, reason, finished_at, seats = columns
        at = aware(finished_at)
        url = f"{URLS.game}{game_id}/"
        return cls(
            id=game_id,
            kind=kind,
            title=KIND_TITLES.get(kind, kind),
            clock_text=CLOCK_TEXT.get(clock, clock),
            status=status,
            # [index, bot, place, username, kept for, declined], in no set order on SQLite.
            seats=[_seat_row(*seat) for seat in sorted(json.loads(seats))] if seats else [],
            ending=ending(reason, ply=ply, kind=kind),
            moves=ply,
            finished_at=at,
            finished_iso=at.isoformat() if at else "",
            finished_text=f"{at.day} {at:%b %Y, %H:%M} UTC" if at else "",
            url=url,
            # A game with no move (withdrawn, declined, aborted at once) has nothing to replay.
            replay_url=f"{url}replay/" if ply else "",
        )


def _seat_row(
    index: int,
    bot: str,
    place: int | None,
    username: str | None,
    kept_for: str | None,
    declined: bool,
) -> SeatRow:
    name = seat_name(bot=bot, player=username, kept_for=kept_for, declined=bool(declined))
    url = player_url(username) if username is not None and not bot else ""
    return SeatRow(name, bool(bot), place, ordinal(place) if place else "", colour(index), url)


@dataclass
class Page:
    rows: list[Row]
    older: Cursor | None  # the next page (older games) starts after this
    newer: Cursor | None  # the previous page (newer games) ends before this
    first: bool  # the newest page: no cursor was given
    filters: Filters = field(default_factory=Filters)
    # False on a player's page, whose URL already names the player.
    player_in_query: bool = True
    # A player's games still running, on the first page of theirs (finished_page(running_of)).
    running: list[Row] = field(default_factory=list)

    @property
    def older_query(self) -> str:
        return self._query("after", self.older)

    @property
    def newer_query(self) -> str:
        return self._query("before", self.newer)

    @property
    def newest_query(self) -> str:
        return self._query("", None)

    def _query(self, name: str, cursor: Cursor | None) -> str:
        params = self.filters.query(player=self.player_in_query)
        if cursor is not None:
            params[name] = cursor.token
        return "?" + urlencode(params)


def finished_page(
    filters: Filters,
    *,
    after: Cursor | None = None,
    before: Cursor | None = None,
    size: int = PAGE_SIZE,
    running_of: Player | None = None,
) -> Page:
    """One page of finished and aborted games, newest finish first, with their seats: one
    query. A player named in `filters` is looked up within it: an unknown name finds nothing.
    A bot's name (models.bot_name) finds the games over with a seat of its level.
    With `running_of`, the first page also has that player's games still running (if they are
    playing), read in the same query.

    Without a player the games are read along game_finished; with one, the player's seats
    along seat_user_finished (a bot's along seat_bot_finished), each joined to its game:
    either way a page reads about as many index entries as it shows, however many games there
    are and however old the player's."""
    params: dict[str, Any] = {"limit": size + 1}
    if not filters.player:
        source, at, game_id = "games_game g", "g.finished_at", "g.id"
        where = ["g.finished_at IS NOT NULL", "g.status IN (%(finished)s, %(aborted)s)"]
        params.update(finished=Game.Status.FINISHED, aborted=Game.Status.ABORTED)
    else:
        source = "games_seat me JOIN games_game g ON g.id = me.game_id"
        at, game_id = "me.finished_at", "me.game_id"
        where = _player_seat_conditions(filters, params)
    where += _game_conditions(filters, params)
    if filters.since:
        where.append(f"{at} >= %(since)s")
        params["since"] = _db_datetime(_day_start(filters.since))
    if filters.until and filters.until < date.max:  # the last day there is: no end at all
        where.append(f"{at} < %(until)s")
        params["until"] = _db_datetime(_day_start(filters.until + timedelta(days=1)))
    # `at <= cursor` alone is what lets the index seek; the OR settles equal times by id.
    cursor = before or after
    cursor_where: list[str] = []
    if cursor is not None:
        params.update(cursor_at=_db_datetime(cursor.at), cursor_id=cursor.id)
        if before is not None:
            cursor_where.append(f"{at} >= %(cursor_at)s")
            cursor_where.append(f"({at} > %(cursor_at)s OR {game_id} > %(cursor_id)s)")
        else:
            cursor_where.append(f"{at} <= %(cursor_at)s")
            cursor_where.append(f"({at} < %(cursor_at)s OR {game_id} < %(cursor_id)s)")
    order = "ASC" if before is not None else "DESC"
    lists = [
        (
            f"{source} WHERE {' AND '.join(where + cursor_where)}",
            f"{at} {order}, {game_id} {order}",
            "%(limit)s",
        )
    ]
    if cursor is None:
        if running_of is not None and running_of.playing:
            lists.append(_running(running_of, filters, params))
    else:
        # The two games nearest the cursor on its other side: a cursor made by hand can stand
        # past either end of the list, and a link back over it would be an empty dead end.
        back = "DESC" if before is not None else "ASC"
        behind_where = [*where, "NOT (" + " AND ".join(cursor_where) + ")"]
        lists.append(
            (
                f"{source} WHERE {' AND '.join(behind_where)}",
                f"{at} {back}, {game_id} {back}",
                "2",
            )
        )
    found, *extra = _game_lists(params, *lists)
    more = len(found) > size
    found = found[:size]
    if before is not None:
        found.reverse()  # newest first, as every page
    # Onwards (from the far end of the page, if there is more) and back (from its end next to
    # the cursor to the games behind it; from an empty page, over the cursor to those past its
    # own game, if it names one).
    onwards: Cursor | None = None
    back_to: Cursor | None = None
    running: list[Row] = []
    if cursor is None:
        onwards = Cursor.of(found[-1]) if more else None
        running = extra[0] if extra else []
    else:
        behind = extra[0]
        past = [row for row in behind if Cursor.of(row) != cursor]
        if more:
            onwards = Cursor.of(found[0] if before is not None else found[-1])
        if found and behind:
            back_to = Cursor.of(found[-1] if before is not None else found[0])
        elif not found and past:
            back_to = cursor
    return Page(
        rows=found,
        older=back_to if before is not None else onwards,
        newer=onwards if before is not None else back_to,
        first=cursor is None,
        filters=filters,
        running=running,
    )


_RESULTS = {"won": "{seat}.place = 1", "lost": "{seat}.place > 1"}


def _player_seat_conditions(filters: Filters, params: dict[str, Any]) -> list[str]:
    """The conditions on the seat (`me`) of the player in `filters`, a person or a bot, in a
    game over, with the result asked for."""
    result = _RESULTS.get(filters.result, "")
    where = ["me.finished_at IS NOT NULL", *([result.format(seat="me")] if result else [])]
    if not filters.bot:
        params["player"] = filters.player
        return ["me.user_id = (SELECT id FROM auth_user WHERE username = %(player)s)", *where]
    params["bot"] = filters.bot
    # A game with two seats of the level (bots alone, or a Corn maze of more) is listed once,
    # by the first of them that has the result asked for.
    twin = " AND ".join(
        ["t.game_id = me.game_id", "t.bot = me.bot", 't."index" < me."index"']
        + ([result.format(seat="t")] if result else [])
    )
    # `me.bot <> ''` is seat_bot_finished's condition, written out so that the index serves a
    # prepared statement's generic plan too, where the level is only a parameter.
    return [
        "me.bot = %(bot)s",
        "me.bot <> ''",
        *where,
        f"NOT EXISTS (SELECT 1 FROM games_seat t WHERE {twin})",
    ]


def _running(player: Player, filters: Filters, params: dict[str, Any]) -> tuple[str, str, str]:
    """The player's games that are open or running (the ones with a clock and no result yet),
    newest first, as a list for _game_lists."""
    params.update(
        running_player=player.id,
        open=Game.Status.OPEN,
        active=Game.Status.ACTIVE,
        running_limit=RUNNING_LIMIT,
    )
    # Seats of games not over have no finished_at: the head of seat_user_finished. A private
    # game waiting for players is shown to its players only (their lobby), not here.
    where = [
        "(g.status = %(active)s OR (g.status = %(open)s AND g.invite_token = ''))",
        "g.id IN (SELECT game_id FROM games_seat WHERE user_id = %(running_player)s "
        "AND finished_at IS NULL)",
        *_game_conditions(filters, params),
    ]
    return (
        f"games_game g WHERE {' AND '.join(where)}",
        "g.created_at DESC, g.id DESC",
        "%(running_limit)s",
    )


# --- a player --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Results:
    kind: str
    title: str
    played: int
    won: int
    lost: int
    timed_out: int


@dataclass(frozen=True)
class Streak:
    won: bool
    length: int

    def __str__(self) -> str:
        if self.length == 1:
            return "1 win" if self.won else "1 loss"
        return f"{self.length} {'wins' if self.won else 'losses'}"


@dataclass(frozen=True)
class Summary:
    results: list[Results]  # per game kind
    streak: Streak | None  # None: no finished game yet


@dataclass(frozen=True)
class Player:
    """Whose page it is, with the summary it heads: enough to draw it, without loading the
    User."""

    id: int
    name: str
    is_guest: bool
    summary: Summary
    playing: bool  # in a game not over: one with a seat that has no finished_at


# The player; their results per game kind, as counted by results_count; and the current streak,
# read along seat_user_finished: the player's newest finished seat, the newest one since with
# the other result (if any), and the seats between counted. Only the seats of finished games
# have a place. Written out, not built with the ORM, which would take longer to compile the
# query than the database takes to run it; in SQL both PostgreSQL and SQLite read.
PLAYER = """
    WITH me AS (
        SELECT id FROM auth_user WHERE username = %(name)s
    ), newest AS (
        SELECT place = 1 AS won FROM games_seat
        WHERE user_id = (SELECT id FROM me) AND place IS NOT NULL
        ORDER BY finished_at DESC, game_id DESC LIMIT 1
    ), change AS (
        SELECT finished_at, game_id FROM games_seat
        WHERE user_id = (SELECT id FROM me) AND place IS NOT NULL
            AND (place = 1) <> (SELECT won FROM newest)
        ORDER BY finished_at DESC, game_id DESC LIMIT 1
    )
    SELECT u.id, u.username, p.is_guest, r.kind, r.played, r.won, r.lost, r.timed_out,
        (SELECT won FROM newest), (
            SELECT count(*) FROM games_seat s
            WHERE s.user_id = (SELECT id FROM me) AND s.place IS NOT NULL
                AND s.finished_at >= coalesce((SELECT finished_at FROM change), '0001-01-01')
                AND (s.finished_at > coalesce((SELECT finished_at FROM change), '0001-01-01')
                    OR s.game_id > (SELECT game_id FROM change))
        ),
        EXISTS (
            SELECT 1 FROM games_seat WHERE user_id = (SELECT id FROM me) AND finished_at IS NULL
        )
    FROM auth_user u
    LEFT JOIN games_profile p ON p.user_id = u.id
    LEFT JOIN games_playerresult r ON r.user_id = u.id AND r.played > 0
    WHERE u.id = (SELECT id FROM me)
    ORDER BY r.kind
"""


def name_as_written(name: str) -> str | None:
    """The name of the player whose name is `name` but for case and width (`UsernameKey`), as
    they write it; None if there is none, or `name` is written so already."""
    written = users_named(name).values_list("username", flat=True).first()
    return written if written != name else None


def player_named(name: str) -> Player | None:
    """The player of this name, with their results and streak: one query, whose cost is the
    streak's length, not the number of the player's games."""
    with read_connection().cursor() as cursor:  # the replica's, where there is one
        cursor.execute(PLAYER, {"name": name})
        rows = cursor.fetchall()
    if not rows:
        return None
    user_id, username, is_guest, *_, newest_won, streak_length, playing = rows[0]
    results = [
        Results(kind, KIND_TITLES.get(kind, kind), played, won, lost, timed_out)
        for _, _, _, kind, played, won, lost, timed_out, _, _, _ in rows
        if kind is not None
    ]
    streak = Streak(won=bool(newest_won), length=streak_length) if results else None
    summary = Summary(results=results, streak=streak)
    return Player(user_id, username, bool(is_guest), summary, playing=bool(playing))
