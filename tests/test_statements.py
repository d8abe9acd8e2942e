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
    inserted: list[list[int]] = []
    statements.rows_insert([move], then=inserted.append)
    assert inserted == [[move.pk]]
    assert Move.objects.get(pk=move.pk).move == {"shifts": [0, 0]}
    Reminder.objects.filter(seat=seat).delete()
    first = Reminder(seat=seat, ply=5, due=clock.now())
    statements.rows_insert([first], ignore_conflicts=True, then=inserted.append)
    again = Reminder(seat=seat, ply=5, due=clock.now() + timedelta(1))
    new = Reminder(seat=seat, ply=6, due=clock.now())
    statements.rows_insert([again, new], ignore_conflicts=True, then=inserted.append)
    ids, more = inserted[1:]
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


def test_writes_together_go_as_one_statement_before_any_other_and_none_if_it_raises(
    make_cornmaze,
) -> None:
    game = make_cornmaze()
    seat = game.seats.get(index=0)
    when = clock.now() + timedelta(days=2)
    with transaction.atomic():
        with CaptureQueriesContext(connection) as captured, statements.writes_together("default"):
            move = Move(game=game, ply=99, seat=0, at=clock.now(), move={"shifts": [0, 0]})
            statements.rows_insert([move])
            game.version += 1
            statements.rows_update([game], ["version"])
            seat.deadline = when
            statements.rows_update([seat], ["deadline"])
            assert move.pk is None and len(captured.captured_queries) == 0
            # A read goes after the writes kept back, and sees them.
            assert Seat.objects.get(pk=seat.pk).deadline == when
            assert move.pk is not None and len(captured.captured_queries) == 2
            # Two writes of one row (here the same table) are not one statement: both hold.
            seat.bank = timedelta(days=3)
            statements.rows_update([seat], ["bank"])
            seat.deadline = when + timedelta(days=1)
            statements.rows_update([seat], ["deadline"])
        assert len(captured.captured_queries) == 4
        stored = Seat.objects.get(pk=seat.pk)
        assert (stored.bank, stored.deadline) == (timedelta(days=3), when + timedelta(days=1))
        assert Game.objects.get(pk=game.pk).version == game.version
        assert Move.objects.get(pk=move.pk).ply == 99
        with pytest.raises(RuntimeError), statements.writes_together("default"):
            seat.deadline = None
            statements.rows_update([seat], ["deadline"])
            raise RuntimeError("the transaction would roll back")
        assert Seat.objects.get(pk=seat.pk).deadline == when + timedelta(days=1)


def test_moves_with_their_writes_together_store_what_writing_each_at_once_stores(
    make_cornmaze, monkeypatch
) -> None:
    """The move path on PostgreSQL (statements.writes_together) against each write sent at
    once, as on any other database: two games from one seed, the same moves."""
    from contextlib import nullcontext

    from games.engines import cornmaze

    seed = bytes(range(32))
    together, one_by_one = make_cornmaze(seed=seed), make_cornmaze(seed=seed)

    def play(game: Game) -> None:
        for _ in range(8):
            game.refresh_from_db()
            if game.status != Game.Status.ACTIVE:
                return
            assert game.state is not None
            (index,) = cornmaze.to_move(game.state)
            user = game.seats.get(index=index).user
            assert user is not None
            legal = cornmaze.legal_moves(game.state)
            quiet = [
                m
                for m in legal
                if cornmaze.result(cornmaze.apply(game.state, index, {"shifts": m})[0]) is None
            ]
            shifts = (quiet or legal)[0]
            core.move_submit(game_id=game.pk, user=user, number=game.ply, move={"shifts": shifts})

    def stored(game: Game) -> tuple[object, ...]:
        game.refresh_from_db()
        return (
            (game.state, game.ply, game.version, game.status, game.result_reason),
            [(m.ply, m.seat, m.move, m.outcome) for m in game.moves.order_by("ply")],
            [(s.index, s.deadline is None, s.place) for s in game.seats.order_by("index")],
            sorted(Reminder.objects.filter(seat__game=game).values_list("seat__index", "ply")),
        )

    play(together)
    monkeypatch.setattr(statements, "writes_together", lambda alias: nullcontext())
    play(one_by_one)
    assert together.ply > 2 and stored(together) == stored(one_by_one)
