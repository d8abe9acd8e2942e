"""Reads for pages: each a fixed number of queries, whatever the number of games."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Prefetch, QuerySet

from games import clock
from games.engines import get_engine
from games.models import Game, Seat
from games.ui import wording

LOBBY_LIMIT = 50


def _with_seats(games: QuerySet[Game]) -> QuerySet[Game]:
    return games.defer("state", "seed").prefetch_related(
        Prefetch("seats", queryset=Seat.objects.select_related("user").order_by("index"))
    )


def open_games() -> list[Game]:
    return list(_with_seats(Game.objects.filter(status=Game.Status.OPEN))[:LOBBY_LIMIT])


def active_games() -> list[Game]:
    return list(
        _with_seats(Game.objects.filter(status=Game.Status.ACTIVE).order_by("-started_at"))[
            :LOBBY_LIMIT
        ]
    )


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


def your_games(user: User) -> list[YourGame]:
    """Your open and running games: those where it is your move first, least time left first."""
    if not user.is_authenticated:
        return []
    now = clock.now()
    seats = (
        Seat.objects.filter(user=user, game__status__in=[Game.Status.OPEN, Game.Status.ACTIVE])
        .select_related("game")
        .defer("game__seed")
        .prefetch_related(
            Prefetch("game__seats", queryset=Seat.objects.select_related("user").order_by("index"))
        )
    )
    rows = [
        YourGame(
            game=s.game,
            seat=s,
            your_move=s.deadline is not None or _to_move_without_clock(s),
            left=(s.deadline - now) if s.deadline else None,
        )
        for s in seats
    ]
    far = datetime.max.replace(tzinfo=now.tzinfo) - now
    rows.sort(key=lambda r: (not r.your_move, r.left if r.left is not None else far))
    return rows


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
    related: list[str | Prefetch[Any]] = [
        Prefetch("seats", queryset=Seat.objects.select_related("user").order_by("index"))
    ]
    if with_moves:
        related.append("moves")
    return Game.objects.filter(pk=game_id).prefetch_related(*related).first()


def game_version(game_id: int) -> tuple[int, str] | None:
    """The cheap read behind polling: one row by primary key, two columns."""
    row = Game.objects.filter(pk=game_id).values_list("version", "status").first()
    return (row[0], row[1]) if row else None
