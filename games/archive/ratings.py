"""Ratings per game kind (Rating, RatingChange), from the places of every rated game: OpenSkill's
Plackett-Luce model, made for places among many players (a Corn maze has up to 6, equal places
share). Written as each rated game ends (play.core.game_end calls `ratings_update`, in the same
transaction), and computed again from every rated game (`ratings_recompute`) with the same
numbers, since both apply the same function to the same games in the same order.

Who is rated: a finished game whose `rated` option is on, whose seats are all registered people
or bots, with at least one person. A guest in any seat makes the game unrated; aborted games
have no places and change nothing; a game of bots alone (selfplay, benches) is not rated, so
that bot ratings come from games against people. A bot level is one player per game kind
(Rating.bot): it plays alike in every game, so a newcomer can measure themselves against it.

The order: a game's end numbers it (Game.rating_seq) after taking its players' rating rows'
locks, so that two games sharing a player are numbered in the order their changes were made,
and the recompute follows that order. finished_at would not do: it can tie, and two games that
end at once may commit in either order."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import Max, Q
from openskill.models import PlackettLuce

from games import statements
from games.models import Game, Profile, Rating, RatingChange, Seat

MODEL = PlackettLuce()  # OpenSkill's defaults: mu 25, sigma 25/3, beta 25/6, tau 25/300
MU: float = MODEL.mu
SIGMA: float = MODEL.sigma

# The number shown: the careful estimate (mu - 3 sigma, the leaderboard's order) on a friendlier
# scale, a newcomer at 1000; and its uncertainty, one sigma on the same scale.
DISPLAY_BASE = 1000
DISPLAY_SCALE = 20
LEADERBOARD_MIN_GAMES = 5  # as the index rating_leaderboard says
EARLIEST = datetime.min.replace(tzinfo=UTC)


def ordinal(mu: float, sigma: float) -> float:
    return mu - 3 * sigma


def display(mu: float, sigma: float) -> int:
    return round(DISPLAY_BASE + DISPLAY_SCALE * ordinal(mu, sigma))


def uncertainty(sigma: float) -> int:
    return round(DISPLAY_SCALE * sigma)


# A player of a game kind: (user id, "") for a person, (None, level) for a bot.
Player = tuple[int | None, str]


@dataclass(frozen=True, slots=True)
class SeatAt:
    """A seat of a rated game as the rating needs it."""

    index: int
    player: Player
    place: int


@dataclass(frozen=True, slots=True)
class Change:
    seat: int
    player: Player
    place: int
    before: tuple[float, float]
    after: tuple[float, float]


def game_rate(seats: Sequence[SeatAt], current: dict[Player, tuple[float, float]]) -> list[Change]:
    """What one game does to its players' (mu, sigma), given their current ones (a player not in
    `current` is new). Pure: the incremental update and the recompute both call it. A player in
    several seats (a bot level twice in a Corn maze) is rated once, at its best seat (the best
    place, then the lowest seat); its other seats play as opponents of the same strength."""
    ordered = sorted(seats, key=lambda s: s.index)
    before = [current.get(s.player, (MU, SIGMA)) for s in ordered]
    teams = [[MODEL.create_rating([mu, sigma])] for mu, sigma in before]
    rated = MODEL.rate(teams, ranks=[float(s.place) for s in ordered])
    best: dict[Player, int] = {}
    for i, seat in enumerate(ordered):
        j = best.get(seat.player)
        if j is None or (seat.place, seat.index) < (ordered[j].place, ordered[j].index):
            best[seat.player] = i
    return [
        Change(
            seat=ordered[i].index,
            player=player,
            place=ordered[i].place,
            before=before[i],
            after=(rated[i][0].mu, rated[i][0].sigma),
        )
        for player, i in sorted(best.items(), key=lambda item: item[1])
    ]


def _is_guest(seat: Seat) -> bool:
    if seat.user is None:
        return False
    try:
        profile = seat.user.profile
    except Profile.DoesNotExist:
        return False
    return profile.is_guest


def game_is_rated(game: Game, seats: Sequence[Seat]) -> bool:
    """Whether this finished game changes ratings (the module's docstring says who is rated);
    `seats` are all its seats, read with their users' profiles."""
    return (
        game.rated
        and game.status == Game.Status.FINISHED
        and bool(seats)
        and all((s.user_id is not None or s.bot) and s.place is not None for s in seats)
        and any(s.user_id is not None and not s.bot for s in seats)
        and not any(_is_guest(s) for s in seats)
    )


def _player(seat: Seat) -> Player:
    return (None, seat.bot) if seat.bot else (seat.user_id, "")


def ratings_update(ended: Sequence[tuple[Game, Sequence[Seat]]]) -> None:
    """The games that have just ended, each with all its seats (read with their users'
    profiles), change their players' ratings: for each rated game, its players' Rating rows
    (made if new) are locked, the game is numbered (rating_seq) and rated, and a RatingChange
    is kept per rated seat. A finished game that may not be rated has its `rated` turned off,
    so that it says so, and a recompute need not ask again. The caller holds the games' locks
    and saves the games (rated, rating_seq); five queries for the lot, none if none is rated."""
    rated: list[tuple[Game, Sequence[Seat]]] = []
    for game, seats in ended:
        if game.status != Game.Status.FINISHED:
            continue
        if game_is_rated(game, seats):
            rated.append((game, seats))
        else:
            game.rated = False
    if not rated:
        return
    rated.sort(key=lambda gs: (gs[0].finished_at or EARLIEST, gs[0].pk))
    keys = sorted({(_player(s), g.kind) for g, seats in rated for s in seats}, key=str)
    # Made if new, then locked in a fixed order: two games ending at once with a player in
    # common wait for each other here, and the second is numbered and rated after the first.
    Rating.objects.bulk_create(
        [
            Rating(
                user_id=user_id,
                bot=bot,
                kind=kind,
                mu=MU,
                sigma=SIGMA,
                ordinal=ordinal(MU, SIGMA),
                games=0,
            )
            for (user_id, bot), kind in keys
        ],
        ignore_conflicts=True,
    )
    which = Q()
    for (user_id, bot), kind in keys:
        which |= Q(user_id=user_id, kind=kind) if user_id is not None else Q(bot=bot, kind=kind)
    rows = {
        ((r.user_id, r.bot), r.kind): r
        for r in Rating.objects.select_for_update().filter(which).order_by("id")
    }
    # Read after the locks: a game that held one of them has committed its number by now.
    seq = Game.objects.filter(rating_seq__isnull=False).aggregate(top=Max("rating_seq"))["top"]
    seq = seq or 0
    changes: list[RatingChange] = []
    for game, seats in rated:
        seq += 1
        game.rating_seq = seq
        current = {
            player: (r.mu, r.sigma) for (player, kind), r in rows.items() if kind == game.kind
        }
        for change in game_rate(
            [SeatAt(s.index, _player(s), s.place or 0) for s in seats], current
        ):
            row = rows[(change.player, game.kind)]
            row.mu, row.sigma = change.after
            row.ordinal = ordinal(row.mu, row.sigma)
            row.games += 1
            changes.append(_change_row(game.pk, game.finished_at, seq, row.pk, change))
    # One short statement each (bulk_update builds a CASE per row and field), with the move's
    # other writes (statements.writes_together).
    statements.rows_update(list(rows.values()), ["mu", "sigma", "ordinal", "games"])
    statements.rows_insert(changes)


def _change_row(
    game_id: int, at: datetime | None, seq: int, rating_id: int, change: Change
) -> RatingChange:
    assert at is not None  # a finished game's
    return RatingChange(
        game_id=game_id,
        seat=change.seat,
        rating_id=rating_id,
        seq=seq,
        at=at,
        place=change.place,
        mu_before=change.before[0],
        sigma_before=change.before[1],
        mu_after=change.after[0],
        sigma_after=change.after[1],
    )


# --- the recompute -----------------------------------------------------------------------------

# Finished games stored without play.core.game_end (loaded by SQL) that may be rated: numbered
# after the others, in finish order, as if they had ended so. One statement for them all.
NUMBER_UNNUMBERED = """
    UPDATE games_game SET rating_seq = n.seq FROM (
        SELECT g.id, %(top)s + row_number() OVER (ORDER BY g.finished_at, g.id) AS seq
        FROM games_game g
        WHERE g.status = %(finished)s AND g.rated AND g.rating_seq IS NULL
            AND NOT EXISTS (
                SELECT 1 FROM games_seat s LEFT JOIN games_profile p ON p.user_id = s.user_id
                WHERE s.game_id = g.id AND (
                    s.place IS NULL OR (s.user_id IS NULL AND s.bot = '')
                    OR (s.user_id IS NOT NULL AND p.is_guest)
                )
            )
            AND EXISTS (
                SELECT 1 FROM games_seat s WHERE s.game_id = g.id AND s.user_id IS NOT NULL
            )
    ) n
    WHERE games_game.id = n.id
"""
CHANGE_COLUMNS = (
    "game_id",
    "seat",
    "rating_id",
    "seq",
    "at",
    "place",
    "mu_before",
    "sigma_before",
    "mu_after",
    "sigma_after",
)
WRITE_EVERY = 20_000  # changes written at a time


@transaction.atomic
def ratings_recompute() -> int:
    """Every rating computed again from the rated games, in their order (rating_seq): the same
    numbers as the updates made as they ended. Finished games loaded by SQL that may be rated
    are numbered first, after the others. In one transaction, so that no page reads the tables
    half made. Returns the number of games rated."""
    _number_unnumbered()
    RatingChange.objects.all().delete()
    Rating.objects.all().delete()
    keys = sorted(
        set(
            Seat.objects.filter(game__rating_seq__isnull=False)
            .values_list("user_id", "bot", "game__kind")
            .distinct()
        ),
        key=str,
    )
    made = Rating.objects.bulk_create(
        Rating(
            user_id=None if bot else user_id,
            bot=bot,
            kind=kind,
            mu=MU,
            sigma=SIGMA,
            ordinal=ordinal(MU, SIGMA),
            games=0,
        )
        for user_id, bot, kind in keys
    )
    ids = {(((r.user_id, r.bot)), r.kind): r.pk for r in made}
    state: dict[str, dict[Player, tuple[float, float]]] = {}
    games_count: dict[tuple[Player, str], int] = {}
    pending: list[tuple[Any, ...]] = []
    rated = 0
    for game_id, kind, seq, at, seats in _rated_games():
        rated += 1
        current = state.setdefault(kind, {})
        for change in game_rate(seats, current):
            current[change.player] = change.after
            key = (change.player, kind)
            games_count[key] = games_count.get(key, 0) + 1
            pending.append(
                (
                    game_id,
                    change.seat,
                    ids[key],
                    seq,
                    at,
                    change.place,
                    *change.before,
                    *change.after,
                )
            )
        if len(pending) >= WRITE_EVERY:
            _changes_write(pending)
            pending = []
    _changes_write(pending)
    _ratings_write(
        [
            (ids[(player, kind)], mu, sigma, ordinal(mu, sigma), games_count[(player, kind)])
            for kind, current in state.items()
            for player, (mu, sigma) in current.items()
        ]
    )
    return rated


def _number_unnumbered() -> None:
    top = Game.objects.filter(rating_seq__isnull=False).aggregate(top=Max("rating_seq"))["top"]
    with connection.cursor() as cursor:
        cursor.execute(NUMBER_UNNUMBERED, {"top": top or 0, "finished": Game.Status.FINISHED})
    # The others are not rated, as their ends would have said.
    Game.objects.filter(status=Game.Status.FINISHED, rated=True, rating_seq__isnull=True).update(
        rated=False
    )


def _rated_games() -> Iterator[tuple[int, str, int, datetime, list[SeatAt]]]:
    """The rated games in their order, each with its seats: one query, read in chunks."""
    rows: Iterable[tuple[Any, ...]] = (
        Seat.objects.filter(game__rating_seq__isnull=False)
        .order_by("game__rating_seq", "game_id", "index")
        .values_list(
            "game_id",
            "game__kind",
            "game__rating_seq",
            "game__finished_at",
            "index",
            "user_id",
            "bot",
            "place",
        )
        .iterator(chunk_size=20_000)
    )
    game: tuple[int, str, int, datetime] | None = None
    seats: list[SeatAt] = []
    for game_id, kind, seq, at, index, user_id, bot, place in rows:
        if game is None or game[0] != game_id:
            if game is not None:
                yield (*game, seats)
            game, seats = (game_id, kind, seq, at), []
        seats.append(SeatAt(index, (None, bot) if bot else (user_id, ""), place))
    if game is not None:
        yield (*game, seats)


def _changes_write(rows: list[tuple[Any, ...]]) -> None:
    if not rows:
        return
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            columns = ", ".join(CHANGE_COLUMNS)
            with cursor.copy(f"COPY games_ratingchange ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        return
    RatingChange.objects.bulk_create(
        (RatingChange(**dict(zip(CHANGE_COLUMNS, row, strict=True))) for row in rows),
        batch_size=5_000,
    )


def _ratings_write(rows: list[tuple[int, float, float, float, int]]) -> None:
    """(id, mu, sigma, ordinal, games) of each rating: a few thousand to a statement."""
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 2_000):
            chunk = rows[start : start + 2_000]
            values = ", ".join(["(%s, %s, %s, %s, %s)"] * len(chunk))
            cursor.execute(
                "UPDATE games_rating SET mu = v.column2, sigma = v.column3, "
                "ordinal = v.column4, games = v.column5 "
                f"FROM (VALUES {values}) AS v WHERE games_rating.id = v.column1",
                [value for row in chunk for value in row],
            )
