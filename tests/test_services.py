from __future__ import annotations

import pytest
from django.db import transaction

from games.engines import cornmaze
from games.models import Game, Move, Seat
from games.play import core
from tests.conftest import FIXED_SEED, a_legal_move, play_to_the_end, seat_user, to_move


def test_a_game_waits_for_its_players_then_starts(make_user):
    alice, bob, carol = make_user(), make_user(), make_user()
    game = core.game_create(
        kind="cornmaze",
        creator=alice,
        options={"size": 7},
        clock_choice="P3D",
        seats=[core.SeatPlan()] * 3,
    )
    assert game.status == Game.Status.OPEN and game.state is None
    core.game_join(game_id=game.pk, user=bob)
    game.refresh_from_db()
    assert game.status == Game.Status.OPEN
    with pytest.raises(core.GameError, match="already have a seat"):
        core.game_join(game_id=game.pk, user=bob)
    core.game_join(game_id=game.pk, user=carol)
    game.refresh_from_db()
    assert game.status == Game.Status.ACTIVE
    assert game.state is not None and game.state["size"] == 7
    first = cornmaze.first_seat(game.state)
    deadlines = dict(game.seats.values_list("index", "deadline"))
    assert deadlines[first] is not None
    assert [i for i, d in deadlines.items() if d is not None] == [first]
    with pytest.raises(core.GameError, match="not waiting for players"):
        core.game_join(game_id=game.pk, user=make_user())


@pytest.mark.parametrize(
    ("options", "seats", "message"),
    [
        ({"size": 5}, 2, "size"),
        ({"size": 13}, 2, "size"),
        ({"size": 8}, 1, "2 to 6 players"),
        ({"size": 8}, 7, "2 to 6 players"),
    ],
)
def test_bad_options_are_refused_and_create_nothing(make_user, options, seats, message):
    with pytest.raises(core.GameError, match=message):
        core.game_create(
            kind="cornmaze",
            creator=make_user(),
            options=options,
            clock_choice="P3D",
            seats=[core.SeatPlan()] * seats,
        )
    assert Game.objects.count() == 0


def test_unknown_bot_and_clock_are_refused(make_user):
    with pytest.raises(core.GameError, match="no bot named"):
        core.game_create(
            kind="cornmaze",
            creator=make_user(),
            options={},
            clock_choice="P3D",
            seats=[core.SeatPlan(), core.SeatPlan(bot="genius")],
        )
    with pytest.raises(core.GameError, match="3 days or 30 days"):
        core.game_create(
            kind="cornmaze",
            creator=make_user(),
            options={},
            clock_choice="live",
            seats=[core.SeatPlan(), core.SeatPlan()],
        )
    assert Game.objects.count() == 0


def test_a_move_is_recorded_and_passes_the_turn(make_cornmaze):
    game = make_cornmaze()
    seat = to_move(game)
    shifts = a_legal_move(game)
    move = core.move_submit(
        game_id=game.pk, user=seat_user(game, seat), number=0, move={"shifts": shifts}
    )
    game.refresh_from_db()
    assert (move.ply, move.seat, move.move) == (1, seat, {"shifts": shifts})
    assert set(move.outcome) == {"drawn", "path", "end"}
    assert game.ply == 1 and game.status == Game.Status.ACTIVE  # a_legal_move does not win
    assert to_move(game) == 1 - seat
    assert game.seats.get(index=seat).deadline is None
    assert game.seats.get(index=1 - seat).deadline is not None


def test_refused_moves_change_nothing(make_cornmaze, make_user):
    game = make_cornmaze()
    seat = to_move(game)
    before = (game.state, game.ply, game.version, Move.objects.count())

    def refused(user, ply, move, message):
        with pytest.raises(core.MoveRefused, match=message):
            core.move_submit(game_id=game.pk, user=user, number=ply, move=move)
        game.refresh_from_db()
        assert (game.state, game.ply, game.version, Move.objects.count()) == before

    mover, other = seat_user(game, seat), seat_user(game, 1 - seat)
    refused(other, 0, {"shifts": [0, 0]}, "not your turn")
    refused(make_user(), 0, {"shifts": [0, 0]}, "no seat")
    refused(mover, 3, {"shifts": [0, 0]}, "earlier position")
    refused(mover, 0, {"shifts": [0]}, "two columns")
    refused(mover, 0, {"shifts": [0, 99]}, "[Cc]olumn")
    refused(mover, 0, {"timeout": True}, "not a move")
    refused(mover, 0, {"resign": True}, "not a move")


def test_a_blocked_column_is_refused(make_cornmaze):
    game = make_cornmaze()
    seat = to_move(game)
    state = dict(game.state)
    size = state["size"]
    # Put the other marker in the bottom row of column c: c can no longer be shifted.
    markers = [list(m) for m in state["markers"]]
    markers[1 - seat] = [size - 1, 2]
    state["markers"] = markers
    Game.objects.filter(pk=game.pk).update(state=state)
    with pytest.raises(core.MoveRefused, match="Column c cannot be shifted"):
        core.move_submit(
            game_id=game.pk, user=seat_user(game, seat), number=0, move={"shifts": [2, 0]}
        )
    assert Move.objects.count() == 0


def test_a_whole_game_ends_with_one_winner_and_no_deadlines(make_cornmaze):
    game = play_to_the_end(make_cornmaze(seats=3, size=6))
    assert game.status == Game.Status.FINISHED and game.finished_at is not None
    places = list(game.seats.order_by("index").values_list("place", flat=True))
    assert places.count(1) == 1 and all(p in (1, 2) for p in places)
    assert not game.seats.exclude(deadline=None).exists()
    with pytest.raises(core.MoveRefused, match="over"):
        core.move_submit(
            game_id=game.pk, user=seat_user(game, 0), number=game.ply, move={"shifts": [0, 0]}
        )


def test_resign_in_a_two_seat_game_loses(make_cornmaze):
    game = make_cornmaze()
    core.game_resign(game_id=game.pk, user=seat_user(game, 0))
    game.refresh_from_db()
    assert game.status == Game.Status.FINISHED and game.result_reason == "resign"
    assert list(game.seats.values_list("place", flat=True)) == [2, 1]


def test_resign_in_a_three_seat_game_drops_the_seat(make_cornmaze):
    game = make_cornmaze(seats=3)
    core.game_resign(game_id=game.pk, user=seat_user(game, 1))
    game.refresh_from_db()
    assert game.status == Game.Status.ACTIVE
    assert game.state["markers"][1] is None
    assert 1 not in cornmaze.to_move(game.state)


def test_bots_play_through_the_service(make_cornmaze):
    game = make_cornmaze(bots=["strong"])
    for _ in range(200):
        game.refresh_from_db()
        if game.status != Game.Status.ACTIVE:
            break
        seat = to_move(game)
        if seat == 1:
            # Running the task twice for the same ply plays once.
            assert core.bot_turn_play(game_id=game.pk, ply=game.ply) is not None
            assert core.bot_turn_play(game_id=game.pk, ply=game.ply - 0) is None
        else:
            core.move_submit(
                game_id=game.pk,
                user=seat_user(game, 0),
                number=game.ply,
                move={"shifts": a_legal_move(game)},
            )
    assert game.status == Game.Status.FINISHED
    assert Move.objects.filter(game=game, seat=1).exists()


def test_a_bot_turn_is_queued_on_commit_only(make_cornmaze, django_capture_on_commit_callbacks):
    # make_cornmaze pauses bot tasks, so nothing is queued while the game is set up. A fixed
    # seed: the person moves first, and its first move does not end the game.
    with django_capture_on_commit_callbacks() as callbacks:
        game = make_cornmaze(bots=["simple"], seed=FIXED_SEED)
    # The new users' cached copies are forgotten on commit too (accounts.backends.forget_user).
    assert [c for c in callbacks if c.__qualname__ != "forget_user.<locals>.mark"] == []
    assert to_move(game) == 0
    # A person's move that hands the turn to the bot queues one bot turn, on commit.
    with django_capture_on_commit_callbacks() as callbacks:
        core.move_submit(
            game_id=game.pk,
            user=seat_user(game, 0),
            number=game.ply,
            move={"shifts": a_legal_move(game)},
        )
    game.refresh_from_db()
    assert game.status == Game.Status.ACTIVE and to_move(game) == 1
    assert len(callbacks) == 1


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_move_leaves_nothing(make_cornmaze):
    game = make_cornmaze()
    seat = to_move(game)
    with pytest.raises(RuntimeError), transaction.atomic():
        core.move_submit(
            game_id=game.pk,
            user=seat_user(game, seat),
            number=0,
            move={"shifts": a_legal_move(game)},
        )
        raise RuntimeError("something later failed")
    game.refresh_from_db()
    assert game.ply == 0 and not Move.objects.exists()


def test_seat_rows_describe_who_sits_where(make_cornmaze):
    game = make_cornmaze(seats=3, bots=["simple", ""])
    names = [s.name for s in Seat.objects.filter(game=game).order_by("index")]
    assert names[1] == "Bot (simple)"
    assert names[0].startswith("player") and names[2].startswith("player")
