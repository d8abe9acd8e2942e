"""Reads of the ratings (games/archive/ratings.py): a player's ratings with the newest of their
history, a page of a game kind's leaderboard, a game's changes. Each is one query, however many
games were rated: the history is read along rating_change_history, newest first and bounded,
the leaderboard along rating_leaderboard by keyset."""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import Any

from django.utils.safestring import SafeString, mark_safe

from games.archive.ratings import LEADERBOARD_MIN_GAMES, display, uncertainty
from games.archive.reads import KIND_TITLES, player_url
from games.models import Game, RatingChange, bot_name
from games.ui import wording
from games.web.inputs import ascii_int
from mazesite.dbrouter import read_connection

HISTORY_POINTS = 100  # the chart's newest games
LEADERBOARD_PAGE = 50


@dataclass(frozen=True)
class PlayerRating:
    kind: str
    title: str
    rating: int
    plus_minus: int
    games: int
    # The shown rating before the oldest game drawn, then after each game, oldest first.
    history: list[int] = field(default_factory=list)

    @property
    def chart(self) -> SafeString:
        return history_svg(self.history, self.title, self.games)

    @property
    def on_leaderboard(self) -> bool:
        return self.games >= LEADERBOARD_MIN_GAMES


def _history_part(n: int) -> str:
    # A LIMIT inside its own SELECT: SQLite takes no ORDER BY or LIMIT in a compound's member.
    return (
        f"SELECT * FROM (SELECT 1, %(kind{n})s, c.mu_before, c.sigma_before, c.mu_after, "
        f"c.sigma_after, c.seq FROM games_ratingchange c WHERE c.rating_id = ("
        f"SELECT id FROM games_rating WHERE user_id = %(user)s AND kind = %(kind{n})s) "
        f"ORDER BY c.seq DESC LIMIT %(points)s) h{n}"
    )


PLAYER_RATINGS = " UNION ALL ".join(
    [
        "SELECT 0, kind, mu, sigma, 0, 0, games FROM games_rating WHERE user_id = %(user)s",
        *(_history_part(n) for n in range(len(Game.Kind.values))),
    ]
)


def player_ratings(user_id: int) -> list[PlayerRating]:
    """The player's rating at each game kind they have a rated game of, with the shown rating
    over their newest HISTORY_POINTS rated games: one query."""
    params: dict[str, Any] = {"user": user_id, "points": HISTORY_POINTS}
    params.update({f"kind{n}": kind for n, kind in enumerate(Game.Kind.values)})
    with read_connection().cursor() as cursor:  # the replica's, where there is one
        cursor.execute(PLAYER_RATINGS, params)
        rows = cursor.fetchall()
    current = {r[1]: r for r in rows if r[0] == 0}
    history: dict[str, list[tuple[int, float, float, float, float]]] = {}
    for part, kind, mu_before, sigma_before, mu_after, sigma_after, seq in rows:
        if part == 1:
            history.setdefault(kind, []).append(
                (seq, mu_before, sigma_before, mu_after, sigma_after)
            )
    found = []
    for kind in Game.Kind.values:
        if kind not in current:
            continue
        _, _, mu, sigma, _, _, games = current[kind]
        changes = sorted(history.get(kind, []))
        points = [display(changes[0][1], changes[0][2])] if changes else []
        points += [display(mu_after, sigma_after) for _, _, _, mu_after, sigma_after in changes]
        found.append(
            PlayerRating(
                kind=kind,
                title=KIND_TITLES.get(kind, kind),
                rating=display(mu, sigma),
                plus_minus=uncertainty(sigma),
                games=games,
                history=points,
            )
        )
    return found


CHART_WIDTH = 320
CHART_HEIGHT = 96
CHART_PAD = 6


def history_svg(points: list[int], title: str, games: int) -> SafeString:
    """A small line chart of the shown rating, drawn here (no JavaScript), with its words for a
    screen reader. Every number is the site's own; the title is escaped."""
    if len(points) < 2:
        return mark_safe("")
    low, high = min(points), max(points)
    span = max(high - low, 1)
    step = (CHART_WIDTH - 2 * CHART_PAD) / (len(points) - 1)
    inner = CHART_HEIGHT - 2 * CHART_PAD
    xy = " ".join(
        f"{CHART_PAD + i * step:.1f},{CHART_PAD + (high - p) * inner / span:.1f}"
        for i, p in enumerate(points)
    )
    shown = len(points) - 1
    over = f"the last {shown} of {games} games" if shown < games else f"{games} games"
    words = (
        f"{title} rating over {over}: from {points[0]} to {points[-1]}, between {low} and {high}."
    )
    return mark_safe(  # every number ours, the words escaped
        f'<svg class="rating-chart" viewBox="0 0 {CHART_WIDTH} {CHART_HEIGHT}" '
        f'width="{CHART_WIDTH}" height="{CHART_HEIGHT}" role="img" aria-label="{escape(words)}">'
        f"<title>{escape(words)}</title>"
        f'<text class="chart-high" x="{CHART_WIDTH - CHART_PAD}" y="14">{high}</text>'
        f'<text class="chart-low" x="{CHART_WIDTH - CHART_PAD}" y="{CHART_HEIGHT - 4}">{low}</text>'
        f'<polyline class="rating-line" points="{xy}"/></svg>'
    )


# --- the leaderboard ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LeaderRow:
    rank: int
    name: str
    url: str  # "" for a bot
    bot: bool
    rating: int
    plus_minus: int
    games: int


@dataclass(frozen=True)
class Leaderboard:
    kind: str
    title: str
    rows: list[LeaderRow]
    after: int | None  # the next page starts after this rating's id
    first: bool


# A page of the kind's players with enough games, best first (ordinal, then id), from the one
# after the cursor; with the cursor's rank, counted once along the same index (not per row).
LEADERBOARD = """
    SELECT r.id, r.mu, r.sigma, r.games, r.bot, u.username, {before}
    FROM games_rating r LEFT JOIN auth_user u ON u.id = r.user_id
    WHERE r.kind = %(kind)s AND r.games >= %(min_games)s {after}
    ORDER BY r.ordinal DESC, r.id ASC
    LIMIT %(limit)s
"""
CURSOR = "(SELECT ordinal FROM games_rating WHERE id = %(after)s)"
AFTER = f"AND (r.ordinal < {CURSOR} OR (r.ordinal = {CURSOR} AND r.id > %(after)s))"
BEFORE = f"""(
    SELECT count(*) FROM games_rating b
    WHERE b.kind = %(kind)s AND b.games >= %(min_games)s
        AND (b.ordinal > {CURSOR} OR (b.ordinal = {CURSOR} AND b.id <= %(after)s))
)"""


def leaderboard_page(kind: str, after_token: str | None = None) -> Leaderboard:
    """A page of LEADERBOARD_PAGE players (people and bots) with at least LEADERBOARD_MIN_GAMES
    rated games of this kind, best first, after the rating `after_token` names (its id): one
    query. A cursor that cannot be read starts at the top."""
    after = ascii_int(after_token, max_digits=18) if after_token else None
    params: dict[str, Any] = {
        "kind": kind,
        "min_games": LEADERBOARD_MIN_GAMES,
        "limit": LEADERBOARD_PAGE + 1,
    }
    if after is None:
        sql = LEADERBOARD.format(before="0", after="")
    else:
        params["after"] = after
        sql = LEADERBOARD.format(before=BEFORE, after=AFTER)
    with read_connection().cursor() as cursor:  # the replica's, where there is one
        cursor.execute(sql, params)
        found = cursor.fetchall()
    more = len(found) > LEADERBOARD_PAGE
    found = found[:LEADERBOARD_PAGE]
    rows = [
        LeaderRow(
            rank=before + n,
            name=bot_name(bot) if bot else str(username),
            url="" if bot else player_url(str(username)),
            bot=bool(bot),
            rating=display(mu, sigma),
            plus_minus=uncertainty(sigma),
            games=games,
        )
        for n, (_, mu, sigma, games, bot, username, before) in enumerate(found, 1)
    ]
    return Leaderboard(
        kind=kind,
        title=KIND_TITLES.get(kind, kind),
        rows=rows,
        after=found[-1][0] if more else None,
        first=after is None,
    )


# --- a game's end ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SeatChange:
    before: int
    after: int

    @property
    def text(self) -> str:
        return wording.rating_change_text(self.before, self.after)

    @property
    def up(self) -> bool:
        return self.after > self.before


def game_changes(game: Game) -> dict[int, SeatChange]:
    """What the game's end did to each rated seat's shown rating (seat index to change); one
    query, none for a game that was not rated."""
    if game.rating_seq is None:
        return {}
    return {
        seat: SeatChange(display(mu_b, sigma_b), display(mu_a, sigma_a))
        for seat, mu_b, sigma_b, mu_a, sigma_a in RatingChange.objects.filter(
            game=game
        ).values_list("seat", "mu_before", "sigma_before", "mu_after", "sigma_after")
    }
