"""The game's partial (`#game` of templates/games/game.html) drawn once per game version and
viewer, kept in the cache, so that a page seen again, by the same viewer or another who sees
the same, costs one small read (`page_facts`) instead of the game, its seats and the drawing.

A game in progress by turns or a slow race is kept (`Game.Status.ACTIVE`, not a live race,
no time bank, no weekends off), and a game over (finished or aborted, any kind): an open game
shows joins, challenges and invites that change without a move, a live race and a bank count
down with the clock, and a clock with weekends off stands still in its weekends. What a kept partial
may show is decided by its key:

- the game (id and the seed's hash, as contexts._log_key), its version (every move, gift of
  time, vacation and join adds one, and so does a rematch offer), its status;
- a finished game's rematch (its id, version and status: an answer to the offer, its start or
  its end adds to the rematch's version, not the finished game's), and whether the players'
  page still asks for an offer (challenges.rematch_wait_until);
- the viewer: its seat (a player sees its own hidden parts: a Robot Maze Race's warehouse, a
  Maze Race's own runner), else signed in or not, and whether a seat is kept for it or it made
  the game; two viewers share a partial only where the page is the same for both;
- every seat's person and name, deadline, bank, place, Ready and way out, its vacation as it
  stands now and whether its deadline has passed (what the seats' rows show), so that a change
  there that did not add to the version still draws the partial again.

What differs from one request to the next is not in the kept HTML: the CSRF token and each
clock's time left (whole seconds) are marks that `fill` replaces for each response. A page
with an error or the viewer's draft is drawn for that request alone and not kept.

The full page around a kept partial (the header, the chat) is kept too, with a mark where the
partial goes (`shell_key`): its key is everything it shows, the viewer (id, name, guest or
not, "Your move: N"), the chat as this viewer reads it (each message with its author's name,
whom the viewer muted), and which static files its addresses name (the manifest's hash); a
page with a message to show (django.contrib.messages) or a chat error is drawn for its request
alone.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.messages import get_messages
from django.contrib.staticfiles.storage import staticfiles_storage
from django.core.cache import cache
from django.db import connection
from django.db.models import CharField, Exists, OuterRef, Subquery, Value
from django.db.models.functions import Cast, Concat
from django.http import HttpRequest

from games import clock
from games.archive import selectors
from games.chat.service import ChatView
from games.models import ChatMessage, Clock, Game, Seat, vacation_now
from games.play import challenges

logger = logging.getLogger(__name__)

# A game in progress moves on to a new key at its next move; a kept partial nobody asks for
# again goes away after this long. A game's rating changes are drawn when they are kept: the
# operator's recompute of every rating (manage.py ratings_recompute) shows on a finished game's
# kept page within this time.
PARTIAL_CACHE_SECONDS = 600

# Marks in a kept partial, replaced for each response. NUL is in no name, text or number the
# page draws (usernames and bot names are letters, digits and @.+-_).
CSRF_MARK = "\x00csrf\x00"
# Where a kept page shell takes the game's partial.
GAME_MARK = "\x00game\x00"


def left_mark(index: int) -> str:
    return f"\x00left{index}\x00"


@dataclass(frozen=True)
class PageFacts:
    """What the cache key is made of, read in one query; `key` is "" when the page is not
    kept (see the module's docstring)."""

    key: str
    version: int
    kind: str
    status: str
    is_player: bool
    deadlines: dict[int, datetime]
    # The viewer's "Your move: N" counts (selectors.your_move_count), when read with the facts.
    your_move_counts: tuple[int, int] | None = None
    # Whether anyone wrote in the game's chat, if read with the facts (None: not known): a page
    # whose game has no message (most games) reads no chat (chat_read). Not part of the key.
    chat_written: bool | None = field(default=None, compare=False)

    @property
    def over(self) -> bool:
        return self.status in {Game.Status.FINISHED, Game.Status.ABORTED}


# What the key is made of, in one statement by the seats' index (game_id, index) written out:
# the ORM's building of it cost about ten times its round trip, on every look at a game page.
_FACTS_COLUMNS = f"""
SELECT s.index, s.user_id, s.reserved_for_id, s.bot, s.deadline, s.bank, s.place,
       v.started_at, v.until,
       g.version, g.status, g.seed_sha256, g.clock, g.race_starts_at,
       g.clock_options ?| array['bank_days', 'weekends_off'], g.created_by_id, g.kind,
       EXISTS (SELECT 1 FROM games_chatmessage c WHERE c.game_id = g.id),
       g.finished_at,
       CASE WHEN g.status = '{Game.Status.FINISHED}' THEN (
           SELECT concat_ws(':', r.id, r.version, r.status) FROM games_game r
           WHERE r.rematch_of_id = g.id) END,
       s.ready_at, s.finished_at, u.username"""
_FACTS_FROM = """games_seat s
JOIN games_game g ON g.id = s.game_id
LEFT JOIN games_vacation v ON v.user_id = s.user_id
LEFT JOIN auth_user u ON u.id = s.user_id
WHERE s.game_id = %s
ORDER BY s.index
"""
FACTS_SQL = f"{_FACTS_COLUMNS}\nFROM {_FACTS_FROM}"
# The same with the signed-in viewer's "Your move: N" counts on every row (one row of its own,
# selectors.YOUR_MOVE_COUNT_SQL), for a full page's header: one round trip for both.
FACTS_YOUR_MOVE_SQL = (
    f"{_FACTS_COLUMNS}, ym.clocks, ym.live_races\n"
    f"FROM ({selectors.YOUR_MOVE_COUNT_SQL}) ym\nCROSS JOIN {_FACTS_FROM}"
)


def _facts_rows(game_id: int, your_move_of: int | None = None) -> list[tuple[Any, ...]]:
    """FACTS_SQL's rows, or FACTS_YOUR_MOVE_SQL's for the user `your_move_of`. It is
    PostgreSQL's (its `?` on the options, its aware datetimes from the driver); elsewhere (make
    run's SQLite) the same columns through the ORM, which converts each value as the driver does
    not, without the counts."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            if your_move_of is None:
                cursor.execute(FACTS_SQL, [game_id])
            else:
                params = [*selectors.your_move_count_params(your_move_of), game_id]
                cursor.execute(FACTS_YOUR_MOVE_SQL, params)
            return cursor.fetchall()
    return _facts_rows_orm(game_id)


def _facts_rows_orm(game_id: int) -> list[tuple[Any, ...]]:
    rows = (
        Seat.objects.filter(game_id=game_id)
        .order_by("index")
        .annotate(
            chat_written=Exists(ChatMessage.objects.filter(game_id=OuterRef("game_id"))),
            rematch=Subquery(
                Game.objects.filter(rematch_of=OuterRef("game_id"))
                .annotate(
                    summary=Concat(
                        Cast("id", CharField()),
                        Value(":"),
                        Cast("version", CharField()),
                        Value(":"),
                        "status",
                        output_field=CharField(),
                    )
                )
                .values("summary")[:1]
            ),
        )
        .values_list(
            "index",
            "user_id",
            "reserved_for_id",
            "bot",
            "deadline",
            "bank",
            "place",
            "user__vacation__started_at",
            "user__vacation__until",
            "game__version",
            "game__status",
            "game__seed_sha256",
            "game__clock",
            "game__race_starts_at",
            "game__clock_options",
            "game__created_by_id",
            "game__kind",
            "chat_written",
            "game__finished_at",
            "rematch",
            "ready_at",
            "finished_at",
            "user__username",
        )
    )
    return [(*r[:14], _clock_counted_per_look(r[14]), *r[15:]) for r in rows]


def _facts_rows_of(game: Game) -> list[tuple[Any, ...]]:
    """FACTS_SQL's rows from a game with its seats, their people and vacations in hand (the
    move's answer: what the move read and wrote under the lock, committed)."""
    rows = []
    for s in sorted(game.seats.all(), key=lambda s: s.index):
        vacation = getattr(s.user, "vacation", None)
        rows.append(
            (
                *(s.index, s.user_id, s.reserved_for_id, s.bot, s.deadline, s.bank, s.place),
                vacation.started_at if vacation else None,
                vacation.until if vacation else None,
                *(game.version, game.status, game.seed_sha256, game.clock, game.race_starts_at),
                _clock_counted_per_look(game.clock_options),
                # Whether the chat has a message: not known (a move's answer shows no chat).
                *(game.created_by_id, game.kind, None, game.finished_at),
                # No rematch: a game's rematch is offered after its last move.
                *(None, s.ready_at, s.finished_at),
                s.user.username if s.user else None,
            )
        )
    return rows


def _clock_counted_per_look(clock_options: dict[str, Any] | None) -> bool:
    """Whether a game's clocks are drawn afresh on each look: a time bank counts down with
    the clock, and a clock with weekends off stands still in its weekends (the SQL above asks
    the same with `?|`)."""
    return bool({"bank_days", "weekends_off"} & set(clock_options or {}))


def page_facts(
    game_id: int,
    user: Any,
    now: datetime,
    *,
    game: Game | None = None,
    your_move: bool = False,
) -> PageFacts | None:
    """The game's kept-partial key for this viewer, from one read of its seats with the game's
    columns that the key needs (with `your_move`, and a viewer signed in, the counts of its
    "Your move: N" too), or from `game` as read with its seats (no read). None for a game with
    no seats (or none at all)."""
    me = user.pk if user.is_authenticated else None
    your_move_of = me if your_move and connection.vendor == "postgresql" else None
    rows = _facts_rows(game_id, your_move_of) if game is None else _facts_rows_of(game)
    if not rows:
        return None
    counts = None
    if your_move_of is not None and game is None:
        counts = (rows[0][-2], rows[0][-1])
        rows = [r[:-2] for r in rows]
    first = rows[0]
    version, status, seed_sha, game_clock, race_starts_at, per_look, created_by, kind = first[9:17]
    written, finished_at, rematch = first[17:20]
    deadlines = {r[0]: r[4] for r in rows if r[4] is not None}
    seat = next((r[0] for r in rows if me is not None and r[1] == me), None)
    facts = PageFacts(
        key="",
        version=version,
        kind=kind,
        status=status,
        is_player=seat is not None,
        deadlines=deadlines,
        your_move_counts=counts,
        chat_written=written,
    )
    if not facts.over and (
        status != Game.Status.ACTIVE
        or game_clock == Clock.LIVE
        or race_starts_at is not None
        or per_look
    ):
        return facts
    if seat is not None:
        viewer = f"s{seat}"
    elif me is None:
        viewer = "a"
    else:
        kept = next((r[0] for r in rows if r[1] is None and r[2] == me), None)
        viewer = "u" + ("" if kept is None else f"k{kept}") + ("c" if created_by == me else "")
    seats = [
        (
            index,
            user_id,
            reserved,
            bot,
            deadline.isoformat() if deadline else "",
            deadline is not None and deadline > now,
            str(bank),
            place,
            # A runner's Ready and its way out (which come with the version, in a race).
            str(ready),
            str(out),
            # On vacation now (what the seat's row shows), and until when.
            away.isoformat() if (away := vacation_now(started, until, now)) else "",
            # The name (a guest who signs up takes a new one, and its player page with it).
            name,
        )
        for (
            index,
            user_id,
            reserved,
            bot,
            deadline,
            bank,
            place,
            started,
            until,
            *_,
            ready,
            out,
            name,
        ) in rows
    ]
    waiting = challenges.rematch_wait_until(finished_at, now) is not None
    shown = (status, game_clock, seats, rematch, waiting)
    digest = hashlib.sha256(repr(shown).encode()).hexdigest()[:24]
    prefix = settings.GAME_LOG_CACHE_PREFIX
    key = f"{prefix}partial:{game_id}:{seed_sha[:16]}:{version}:{viewer}:{digest}"
    return replace(facts, key=key)


def kept(*keys: str, also_set: tuple[str, Any, int] | None = None) -> list[str | None]:
    """The HTML kept under each key ("": none asked), None where none is: one round trip, which
    also writes `also_set` (key, value, seconds: the page's watching mark) if given."""
    asked = [k for k in keys if k]
    try:
        # The site's cache does both in one pipeline (mazesite/cache.py); another, one by one.
        both = getattr(cache, "set_and_get_many", None)
        if also_set is not None and both is not None:
            found = both(*also_set, asked)
        else:
            if also_set is not None:
                cache.set(*also_set)
            found = cache.get_many(asked) if asked else {}
    except Exception:  # noqa: BLE001 - without the cache, the page is drawn
        logger.warning("could not read a game's page from the cache", exc_info=True)
        found = {}
    return [html if isinstance(html := found.get(k), str) else None for k in keys]


def keep(key: str, html: str) -> None:
    try:
        cache.set(key, html, PARTIAL_CACHE_SECONDS)
    except Exception:  # noqa: BLE001 - a cache outage must not break the page
        logger.warning("could not keep a game's partial in the cache", exc_info=True)


def marked(context: dict[str, Any]) -> dict[str, Any]:
    """The game context with marks where a kept partial differs per request: each seat's time
    left and the CSRF token (which the context then gives every form)."""
    for row in context["seats"]:
        if row["left"] is not None:
            row["left"] = left_mark(row["seat"].index)
    return {**context, "csrf_token": CSRF_MARK}


def fill(html: str, token: str, deadlines: dict[int, datetime], now: datetime) -> str | None:
    """A kept partial for this request: its CSRF token and the clocks' time left now; None if
    a mark is left over (not drawn from these facts: draw the page afresh)."""
    html = html.replace(CSRF_MARK, token)
    for index, deadline in deadlines.items():
        html = html.replace(left_mark(index), clock.format_left(deadline - now))
    if "\x00" in html:
        logger.warning("a kept game partial did not match its facts")
        return None
    return html


def _static_files_version() -> str:
    """Which static files the page shell's addresses name: the manifest's hash, new with any
    deploy's changed file (whitenoise's manifest storage); "" where an address carries no hash
    of its file (DEBUG), so it names the same file whatever the deploy."""
    return str(getattr(staticfiles_storage, "manifest_hash", "") or "")


def shell_key(
    request: HttpRequest, facts: PageFacts, game_id: int, chat: ChatView
) -> tuple[str, int | None]:
    """(the key of the full page around the game's kept partial for this viewer, "" if the page
    is drawn for its request alone; the viewer's "Your move: N", None for a visitor)."""
    user: Any = request.user
    kind = facts.kind
    your_move = None
    viewer: tuple[Any, ...] = ()
    if user.is_authenticated:
        your_move = selectors.your_move_count(user, facts.your_move_counts)
        profile = getattr(user, "profile", None)
        viewer = (user.pk, user.get_username(), profile and profile.is_guest, your_move)
    if len(get_messages(request)):
        return "", your_move
    messages = [
        (m.pk, m.author_id, m.author.get_username(), m.channel, m.text, m.created_at.isoformat())
        for m in (*chat.players, *chat.spectators)
    ]
    shown = (
        kind,
        viewer,
        (chat.is_player, chat.over, chat.can_write, chat.show_spectators),
        (chat.hidden_players, chat.hidden_spectators),
        chat.last_id,
        chat.muted,
        messages,
        _static_files_version(),
    )
    digest = hashlib.sha256(repr(shown).encode()).hexdigest()[:24]
    return f"{settings.GAME_LOG_CACHE_PREFIX}page:{game_id}:{digest}", your_move


def shell_fill(shell: str, token: str, partial: str) -> str | None:
    """A kept page shell with this request's CSRF token and the game's filled partial; None if
    a mark is left over."""
    shell = shell.replace(CSRF_MARK, token)
    if shell.count("\x00") != GAME_MARK.count("\x00") or GAME_MARK not in shell:
        logger.warning("a kept game page did not have its marks")
        return None
    return shell.replace(GAME_MARK, partial)
