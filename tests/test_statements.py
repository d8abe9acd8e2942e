"""The move path's own statements (games/statements.py) against the real database: a compiled
read gives what its queryset gives, with the related objects it selects, on each call's values;
the row writes change exactly the rows they name."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from games import clock, statements
from games.models import Game, Move, Reminder, Seat
from games.play import core

pytestmark = pytest.mark.django_db

GAME = -7_000_101

SEATS = statements.Compiled(
    lambda game_id: (
        Seat.objects.select_related("user__profile").filter(game_id=game_id).order_by("index")
    ),
    GAME,
)


def test_a_compiled_read_gives_what_its_queryset_gives_for_each_value(make_cornmaze) -> None:
    games = [make_cornmaze(), make_cornmaze(seats=3)]
    for game in games:  # the second call runs the statement compiled by the first
        with CaptureQueriesContext(connection) as captured:
            seats = SEATS.fetch(game.pk, alias="default")
            # The users and their profiles (none here) selected with the seats.
            assert all(Seat.user.is_cached(seat) for seat in seats)
            assert all(s.user is not None and User.profile.is_cached(s.user) for s in seats)
        assert len(captured.captured_queries) == 1
        expected = list(Seat.objects.filter(game=game).order_by("index"))
        assert [(s.pk, s.index, s.user_id, s.deadline) for s in seats] == [
            (s.pk, s.index, s.user_id, s.deadline) for s in expected
        ]
    assert SEATS.fetch(0, alias="default") == []


def test_a_compiled_read_refuses_a_parameter_that_is_not_a_marker() -> None:
    read = statements.Compiled(lambda pk: Game.objects.filter(pk=pk, ply=3), GAME)
    with pytest.raises(ValueError, match="every parameter"):
        read.fetch(1, alias="default")


def test_rows_update_writes_each_row_its_own_values_nulls_too(make_cornmaze) -> None:
    game = make_cornmaze(seats=3)
    seats = list(game.seats.order_by("index"))
    other = list(make_cornmaze().seats.order_by("index"))
    before = [(s.pk, s.deadline) for s in other]
    when = clock.now() + timedelta(days=2)
    seats[0].deadline, seats[1].deadline, seats[2].deadline = None, when, when + timedelta(1)
    with CaptureQueriesContext(connection) as captured:
        statements.rows_update(seats, ["deadline"])
    assert len(captured.captured_queries) == 1
    assert [s.deadline for s in game.seats.order_by("index")] == [s.deadline for s in seats]
    assert [(s.pk, s.deadline) for s in Seat.objects.filter(game=other[0].game_id)] == before


def test_rows_insert_gives_ids_and_with_ignore_conflicts_only_the_new_ones(make_cornmaze) -> None:
    game = make_cornmaze()
    seat = game.seats.get(index=1)
    move = Move(game=game, ply=99, seat=1, at=clock.now(), move={"shifts": [0, 0]})
    assert statements.rows_insert([move]) == [move.pk]
    assert Move.objects.get(pk=move.pk).move == {"shifts": [0, 0]}
    Reminder.objects.filter(seat=seat).delete()
    first = Reminder(seat=seat, ply=5, due=clock.now())
    ids = statements.rows_insert([first], ignore_conflicts=True)
    again = Reminder(seat=seat, ply=5, due=clock.now() + timedelta(1))
    new = Reminder(seat=seat, ply=6, due=clock.now())
    more = statements.rows_insert([again, new], ignore_conflicts=True)
    assert len(ids) == len(more) == 1 and ids != more
    assert sorted(Reminder.objects.filter(seat=seat).values_list("ply", "due")) == [
        (5, first.due),
        (6, new.due),
    ]


def test_rows_replace_deletes_the_named_rows_and_writes_the_new_ones(make_cornmaze) -> None:
    game = make_cornmaze()
    mover, next_player = game.seats.order_by("index")
    kept = make_cornmaze().seats.get(index=0)
    Reminder.objects.all().delete()
    Reminder.objects.create(seat=mover, ply=1, due=clock.now())
    Reminder.objects.create(seat=kept, ply=1, due=clock.now())
    with CaptureQueriesContext(connection) as captured:
        statements.rows_replace(
            Reminder, "seat", [mover.pk], [Reminder(seat=next_player, ply=2, due=clock.now())]
        )
    # One statement on PostgreSQL (the DELETE in a WITH); SQLite has no such WITH: two.
    assert len(captured.captured_queries) == (1 if connection.vendor == "postgresql" else 2)
    assert sorted(Reminder.objects.values_list("seat_id", "ply")) == sorted(
        [(kept.pk, 1), (next_player.pk, 2)]
    )


def test_the_game_read_under_its_lock_is_the_game_as_stored(make_cornmaze) -> None:
    game = make_cornmaze()
    with transaction.atomic():
        locked = core.game_locked(game.pk)
        assert (locked.pk, locked.state, bytes(locked.seed), locked.options) == (
            game.pk,
            game.state,
            bytes(game.seed),
            game.options,
        )
        with pytest.raises(core.GameError, match="no such game"):
            core.game_locked(0)
