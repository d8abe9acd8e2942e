"""Reads behind the archive, the player pages and their feeds: finished games with filters that
combine, paged by keyset on (finished_at, id), never OFFSET, so that a page deep in a million
games costs what the first one does. Each function is a fixed number of queries."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from urllib.parse import quote, urlencode

from django import forms
from django.contrib.auth.models import User
from django.db.models import (
    BooleanField,
    Case,
    Exists,
    ExpressionWrapper,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Coalesce
from django.db.models.lookups import IsNull
from django.urls import reverse
from django.utils.functional import cached_property

from .models import Clock, Game, Move, Seat
from .ui import colour

PAGE_SIZE = 25
FEED_SIZE = 50
ACTIVE_LIMIT = 100
OVER = [Game.Status.FINISHED, Game.Status.ABORTED]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# How a game ended, in words, from Game.result_reason. Engines may add reasons; an unknown one
# is shown as it is.
ENDINGS = {
    "exit": "reached the exit",
    "damage": "robot broke down",
    "timeout": "out of time",
    "resign": "resignation",
    "deadline": "race time ran out",
    "aborted": "aborted, no result",
}


def ending(reason: str) -> str:
    return ENDINGS.get(reason, reason.replace("_", " ") or "unknown")


def ordinal(place: int) -> str:
    suffix = "th" if 10 <= place % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(place % 10, "th")
    return f"{place}{suffix}"


# --- filters ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Filters:
    """What the visitor asked for. Every field is optional; they combine with AND."""

    kind: str = ""
    player: str = ""  # a username; guests' contain a space
    result: str = ""  # "won" or "lost", by `player`
    clock: str = ""  # a Clock value
    bots: str = ""  # "yes": a bot sat in the game; "no": people only
    since: date | None = None  # finished on or after this day (UTC)
    until: date | None = None  # finished on or before this day (UTC)

    def query(self, *, player: bool = True) -> dict[str, str]:
        """The filters as URL parameters, without the empty ones."""
        params = {
            "game": self.kind,
            "player": self.player if player else "",
            "result": self.result,
            "clock": self.clock,
            "bots": self.bots,
            "from": self.since.isoformat() if self.since else "",
            "to": self.until.isoformat() if self.until else "",
        }
        return {k: v for k, v in params.items() if v}

    @property
    def any(self) -> bool:
        return bool(self.query())


class FilterForm(forms.Form):
    """The filter form, read from the query string. A bad value is dropped with a message, not
    turned into an error page: a shared link stays usable."""

    game = forms.ChoiceField(
        choices=[("", "any game"), *Game.Kind.choices], required=False, label="Game"
    )
    player = forms.CharField(max_length=150, required=False, label="Player")
    result = forms.ChoiceField(
        choices=[("", "any result"), ("won", "won"), ("lost", "lost")],
        required=False,
        label="Result",
        help_text="won or lost by the player",
    )
    clock = forms.ChoiceField(
        choices=[
            ("", "any clock"),
            (Clock.DAYS_3, "3 days"),
            (Clock.DAYS_30, "30 days"),
            (Clock.LIVE, "live"),
        ],
        required=False,
        label="Clock",
    )
    bots = forms.ChoiceField(
        choices=[("", "with or without bots"), ("yes", "with a bot"), ("no", "people only")],
        required=False,
        label="Bots",
    )

    def __init__(self, *args: Any, with_player: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # `from` and `to` are Python keywords, so these two are added by name.
        date_input = forms.DateInput(attrs={"type": "date"})
        self.fields["from"] = forms.DateField(required=False, label="From", widget=date_input)
        self.fields["to"] = forms.DateField(required=False, label="To", widget=date_input)
        if not with_player:
            del self.fields["player"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        since, until = data.get("from"), data.get("to")
        if since and until and since > until:
            self.add_error("to", "The end date is before the start date.")
        if data.get("result") and "player" in self.fields and not data.get("player"):
            self.add_error("result", "Choose a player to see the games they won or lost.")
        return data

    def controls(self) -> list[dict[str, Any]]:
        """The fields, ready to print as plain HTML: a page of games is drawn often, and
        Django's widget templates would cost more than the database does."""
        out = []
        for name, f in self.fields.items():
            raw = self.data.get(name, "") if self.is_bound else ""
            value = raw if isinstance(raw, str) else ""
            control: dict[str, Any] = {"name": name, "label": f.label, "value": value}
            if isinstance(f, forms.ChoiceField):
                choices: list[tuple[str, str]] = list(f.choices)  # type: ignore[arg-type]
                control["options"] = [(v, label, v == value) for v, label in choices]
            else:
                control["type"] = "date" if isinstance(f, forms.DateField) else "search"
            out.append(control)
        return out

    def filters(self, *, player: str = "") -> Filters:
        """The valid filters; invalid fields are left out (their errors show on the form)."""
        data = self.cleaned_data if self.is_bound and hasattr(self, "cleaned_data") else {}

        def ok(name: str) -> Any:
            return None if name in self.errors else data.get(name)

        return Filters(
            kind=ok("game") or "",
            player=player or (ok("player") or "").strip(),
            result=ok("result") or "",
            clock=ok("clock") or "",
            bots=ok("bots") or "",
            since=ok("from"),
            until=ok("to"),
        )


def filters_from(params: Any, *, player: str = "") -> tuple[FilterForm, Filters]:
    """The form, bound to the query string, and the filters it gives. With `player`, the page
    is that player's: the form has no player field."""
    form = FilterForm(params, with_player=not player)
    form.is_valid()
    return form, form.filters(player=player)


def player_named(name: str) -> User | None:
    return User.objects.filter(username=name).select_related("profile").first()


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def _filtered(games: QuerySet[Game], filters: Filters, player: User | None) -> QuerySet[Game]:
    if filters.kind:
        games = games.filter(kind=filters.kind)
    if filters.clock:
        games = games.filter(clock=filters.clock)
    if filters.bots:
        with_bot = Exists(Seat.objects.filter(game=OuterRef("pk")).exclude(bot=""))
        games = games.filter(with_bot if filters.bots == "yes" else ~with_bot)
    if player is not None:
        seats = Seat.objects.filter(user=player)
        if filters.result == "won":
            seats = seats.filter(place=1)
        elif filters.result == "lost":
            seats = seats.filter(place__gt=1)
        # Driven from the player's seats: a player's few games, not a walk through all.
        games = games.filter(pk__in=seats.values("game_id"))
    return games


GAME_FIELDS = ("id", "kind", "clock", "status", "ply", "result_reason", "finished_at")


def _newest_first(games: QuerySet[Game], *, by_player: bool) -> QuerySet[Game]:
    if by_player:
        # From the player's seats, never by walking the game_finished index: that walk looks
        # cheap to the planner, but for a player whose last game is old it reads every game
        # finished since. COALESCE (a no-op here) is an order no index offers, so the cost is
        # the player's own number of games.
        return games.order_by(Coalesce("finished_at", Value(EPOCH)).desc(), "-id")
    return games.order_by("-finished_at", "-id")


def _rows(games: list[dict[str, Any]]) -> list[Row]:
    """Rows for these games (dicts of GAME_FIELDS), with their seats: one query. Plain values,
    not model instances: a page of 25 games is built in a fraction of a millisecond."""
    seats: dict[int, list[tuple[int, str, int | None, str | None]]] = {}
    if games:
        found = Seat.objects.filter(game_id__in=[g["id"] for g in games]).values_list(
            "game_id", "index", "bot", "place", "user__username"
        )
        for game_id, index, bot, place, username in found:
            seats.setdefault(game_id, []).append((index, bot, place, username))
    return [Row.of(g, sorted(seats.get(g["id"], []))) for g in games]


# --- keyset pages ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Cursor:
    """A place in the list: the (finished_at, id) of a game. In the URL as `<µs>.<id>`, exact
    to the microsecond that PostgreSQL keeps."""

    at: datetime
    id: int

    @classmethod
    def of(cls, game: dict[str, Any]) -> Cursor:
        return cls(at=game["finished_at"], id=game["id"])

    @classmethod
    def parse(cls, token: str | None) -> Cursor | None:
        if not token:
            return None
        micros, _, pk = token.partition(".")
        try:
            return cls(at=EPOCH + timedelta(microseconds=int(micros)), id=int(pk))
        except (ValueError, OverflowError):
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


@dataclass(frozen=True)
class SeatRow:
    name: str
    bot: bool
    place: int | None
    place_text: str
    colour: str
    url: str  # the player's page; "" for a bot or an open seat


@dataclass(frozen=True)
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
    def of(cls, game: dict[str, Any], seats: list[tuple[int, str, int | None, str | None]]) -> Row:
        finished: datetime | None = game["finished_at"]
        at = finished.astimezone(UTC) if finished else None
        url = f"{URLS.game}{game['id']}/"
        return cls(
            id=game["id"],
            kind=game["kind"],
            title=str(KIND_TITLES.get(game["kind"], game["kind"])),
            clock_text=CLOCK_TEXT.get(game["clock"], game["clock"]),
            status=game["status"],
            seats=[_seat_row(*seat) for seat in seats],
            ending=ending(game["result_reason"]),
            moves=game["ply"],
            finished_at=finished,
            finished_iso=at.isoformat() if at else "",
            finished_text=f"{at.day} {at:%b %Y, %H:%M} UTC" if at else "",
            url=url,
            replay_url=f"{url}replay/",
        )


def _seat_row(index: int, bot: str, place: int | None, username: str | None) -> SeatRow:
    if bot:
        name, url = f"Bot ({bot})", ""
    elif username is None:
        name, url = "(open seat)", ""
    else:
        # As reverse() quotes a path: guests' names have a space.
        name, url = username, f"{URLS.player}{quote(username, safe='@+')}/"
    return SeatRow(
        name=name,
        bot=bool(bot),
        place=place,
        place_text=ordinal(place) if place else "",
        colour=colour(index),
        url=url,
    )


@dataclass
class Page:
    rows: list[Row]
    older: Cursor | None  # the next page (older games) starts after this
    newer: Cursor | None  # the previous page (newer games) ends before this
    first: bool  # the newest page: no cursor was given
    filters: Filters = field(default_factory=Filters)
    # False on a player's page, whose URL already names the player.
    player_in_query: bool = True

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
    player: User | None,
    after: Cursor | None = None,
    before: Cursor | None = None,
    size: int = PAGE_SIZE,
) -> Page:
    """One page of finished and aborted games, newest finish first: two queries (the games,
    their seats). `player` is the User behind `filters.player` (None: no such filter)."""
    games = Game.objects.filter(finished_at__isnull=False, status__in=OVER)
    games = _filtered(games, filters, player)
    by_player = player is not None
    if filters.since:
        games = games.filter(finished_at__gte=_day_start(filters.since))
    if filters.until:
        games = games.filter(finished_at__lt=_day_start(filters.until + timedelta(days=1)))
    # `finished_at <= at` alone is what lets the index seek; the OR settles equal times by id.
    older: Cursor | None
    newer: Cursor | None
    if before is not None:
        games = games.filter(finished_at__gte=before.at).filter(
            Q(finished_at__gt=before.at) | Q(pk__gt=before.id)
        )
        oldest_first = _newest_first(games, by_player=by_player).reverse()
        found = list(oldest_first.values(*GAME_FIELDS)[: size + 1])
        more = len(found) > size
        found = found[:size][::-1]
        newer = Cursor.of(found[0]) if more else None
        older = Cursor.of(found[-1]) if found else before
    else:
        if after is not None:
            games = games.filter(finished_at__lte=after.at).filter(
                Q(finished_at__lt=after.at) | Q(pk__lt=after.id)
            )
        found = list(_newest_first(games, by_player=by_player).values(*GAME_FIELDS)[: size + 1])
        more = len(found) > size
        found = found[:size]
        older = Cursor.of(found[-1]) if more else None
        newer = (Cursor.of(found[0]) if found else after) if after is not None else None
    return Page(
        rows=_rows(found),
        older=older,
        newer=newer,
        first=after is None and before is None,
        filters=filters,
    )


def empty_page(filters: Filters) -> Page:
    return Page(rows=[], older=None, newer=None, first=True, filters=filters)


# --- a player --------------------------------------------------------------------------------


def active_games(player: User, filters: Filters) -> list[Row]:
    """The player's games that are open or running (the ones with a clock and no result yet),
    newest first; two queries."""
    games = Game.objects.filter(
        status__in=[Game.Status.OPEN, Game.Status.ACTIVE],
        pk__in=Seat.objects.filter(user=player).values("game_id"),
    )
    games = _filtered(
        games, Filters(kind=filters.kind, clock=filters.clock, bots=filters.bots), None
    )
    return _rows(list(games.order_by("-created_at", "-id").values(*GAME_FIELDS)[:ACTIVE_LIMIT]))


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


def player_summary(player: User) -> Summary:
    """Results per game kind (played, won, lost, lost on time) and the current streak, from
    one query: a small row per finished game of the player, newest first. One pass over the
    player's games, driven from their seats, instead of one for each figure.

    A seat that ran out of time lost. In a game of two that is all there is to know: the game
    ended on time (`result_reason`). In a Corn maze of more, a seat that runs out is dropped
    and the game goes on, so only the moves tell: there the site's `{"timeout": true}` for
    that seat is looked for. The CASE keeps that look to the lost seats of such games."""
    # A LIMIT 1 subquery, not EXISTS: PostgreSQL may turn an EXISTS into one scan of every
    # seat, hashed; this stays one probe of seat_unique_index per lost seat.
    third_seat = Subquery(Seat.objects.filter(game=OuterRef("game_id"), index=2).values("id")[:1])
    timeout_move = Move.objects.filter(
        game=OuterRef("game_id"), seat=OuterRef("index"), move__timeout=True
    )
    lost_on_time = Case(
        When(Q(place__isnull=True) | Q(place__lte=1), then=Value(False)),
        When(IsNull(third_seat, False), then=Exists(timeout_move)),
        default=ExpressionWrapper(Q(game__result_reason="timeout"), output_field=BooleanField()),
        output_field=BooleanField(),
    )
    rows = (
        Seat.objects.filter(user=player, game__status=Game.Status.FINISHED)
        .annotate(lost_on_time=lost_on_time)
        # Driven from the player's seats, as in _newest_first.
        .order_by(Coalesce("game__finished_at", Value(EPOCH)).desc(), "-game_id")
        .values_list("game__kind", "place", "lost_on_time")
    )
    tally: dict[str, list[int]] = {}
    streak: Streak | None = None
    counting = True
    for kind, place, timed_out in rows:
        won = place == 1
        played_won_lost_timed = tally.setdefault(kind, [0, 0, 0, 0])
        played_won_lost_timed[0] += 1
        played_won_lost_timed[1 if won else 2] += 1
        played_won_lost_timed[3] += bool(timed_out)
        if streak is None:
            streak = Streak(won=won, length=1)
        elif counting and won == streak.won:
            streak = Streak(won=won, length=streak.length + 1)
        else:
            counting = False
    results = [
        Results(kind, str(KIND_TITLES.get(kind, kind)), *figures)
        for kind, figures in sorted(tally.items())
    ]
    return Summary(results=results, streak=streak)
