"""The sweep: timeouts (lose, dropped, aborted), reminders, lost bot turns, lost mails, each
exactly once, also with sweeps running at once."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core import mail
from django.db import connection, connections
from django.db.models import Q
from django.test import Client
from django.test.utils import CaptureQueriesContext

from games.mail import outbox
from games.models import Game, Move, Outbox, Reminder, Seat
from games.play import core, sweeps
from tests.test_mazerace_site import make_race
from tests.worker_fixtures import Queued, make_game, make_player, play_one, to_move

# Ahead of the real clock, so that nothing is overdue by accident outside time travel.
START = datetime.now(UTC).replace(microsecond=0) + timedelta(days=1)
LATE = START + timedelta(days=3, seconds=1)
pytestmark = pytest.mark.usefixtures("queued")


@pytest.mark.django_db
def test_in_a_two_seat_game_the_seat_that_runs_out_loses() -> None:
    with time_machine.travel(START, tick=False):
        game = make_game(make_player(), make_player())
        play_one(game)
    loser = to_move(game)
    with time_machine.travel(LATE - timedelta(seconds=2), tick=False):
        assert sweeps.deadlines_sweep() == 0  # not yet
    with time_machine.travel(LATE, tick=False):
        assert sweeps.deadlines_sweep() == 1
        assert sweeps.deadlines_sweep() == 0  # once
    game.refresh_from_db()
    assert game.status == Game.Status.FINISHED and game.result_reason == "timeout"
    assert game.finished_at == LATE
    places = dict(game.seats.values_list("index", "place"))
    assert places == {loser: 2, 1 - loser: 1}
    last = Move.objects.get(game=game, ply=2)
    assert last.move == {"timeout": True} and last.seat == loser
    assert not Seat.objects.filter(game=game, deadline__isnull=False).exists()
    assert not Reminder.objects.filter(seat__game=game).exists()


@pytest.mark.django_db
def test_a_game_with_no_move_yet_is_aborted() -> None:
    with time_machine.travel(START, tick=False):
        game = make_game(make_player(), make_player())
    with time_machine.travel(LATE, tick=False):
        assert sweeps.deadlines_sweep() == 1
    game.refresh_from_db()
    assert game.status == Game.Status.ABORTED and game.ply == 0
    assert not game.seats.filter(place__isnull=False).exists()
    assert not Reminder.objects.exists()


@pytest.mark.django_db
def test_in_a_corn_maze_of_three_the_seat_that_runs_out_is_dropped_and_play_goes_on() -> None:
    with time_machine.travel(START, tick=False):
        game = make_game(make_player(), make_player(), make_player())
        play_one(game)
    dropped = to_move(game)
    with time_machine.travel(LATE, tick=False):
        assert sweeps.deadlines_sweep() == 1
    game.refresh_from_db()
    assert game.status == Game.Status.ACTIVE and game.ply == 2
    assert game.state is not None and dropped in game.state["dropped"]
    following = to_move(game)
    assert following != dropped
    seat = Seat.objects.get(game=game, index=following)
    assert seat.deadline == LATE + timedelta(days=3)
    assert Reminder.objects.get().seat_id == seat.pk
    # The next one runs out too: the last seat left wins.
    with time_machine.travel(LATE + timedelta(days=3, seconds=1), tick=False):
        assert sweeps.deadlines_sweep() == 1
    game.refresh_from_db()
    assert game.status == Game.Status.FINISHED
    (winner,) = {0, 1, 2} - {dropped, following}
    assert Seat.objects.get(game=game, index=winner).place == 1


@pytest.mark.django_db
def test_players_who_left_in_different_ways_are_each_named_as_they_left() -> None:
    """Of three, one resigns and then another runs out of time: the page, the game-over mail
    and the replay say who did which (they said "the others ran out of time", and the mail
    named only the last to leave)."""
    with time_machine.travel(START, tick=False):
        game = make_game(make_player(), make_player(), make_player())
        play_one(game)
        late = to_move(game)
        (quitter,) = {1, 2, 0} - {late, game.moves.get().seat}
        core.game_resign(game_id=game.pk, user=Seat.objects.get(game=game, index=quitter).user)
    with time_machine.travel(LATE, tick=False):
        assert sweeps.deadlines_sweep() == 1
    game.refresh_from_db()
    assert (game.status, game.result_reason) == (Game.Status.FINISHED, "timeout")
    seats = list(game.seats.order_by("index"))
    names = {s.index: s.name for s in seats}
    (winner,) = [s for s in seats if s.place == 1]
    how = f"{names[quitter]} resigned and {names[late]} ran out of time"
    page = Client().get(game.get_absolute_url()).content.decode()
    assert f"{names[winner.index]} wins</strong> ({how})." in page
    # The log says it in words too (it said "timeout").
    assert '<span class="notation">ran out of time</span>' in page
    rows = Outbox.objects.filter(game=game, kind="game_over")
    with time_machine.travel(LATE + timedelta(minutes=5), tick=False):
        sent = {row.seat: outbox.outbox_send(outbox_id=row.pk) for row in rows}
    assert sent == {0: "sent", 1: "sent", 2: "sent"}
    bodies = {m.to[0]: m.body for m in mail.outbox}
    # The winner is told "You won", not its own name.
    assert f"\nYou won ({how})." in bodies[winner.user.email]
    assert f"{names[winner.index]} won" not in bodies[winner.user.email]
    assert (
        f"{names[winner.index]} won (you resigned and {names[late]} ran out of time)."
        in bodies[seats[quitter].user.email]
    )
    replay = Client().get(f"/games/{game.pk}/replay/?ply={game.ply}").content.decode()
    assert f"Move {game.ply} of {game.ply}: {names[late]} ran out of time." in replay


@pytest.mark.django_db
def test_a_slow_race_names_both_runners_as_they_left_on_its_page_and_in_its_mail() -> None:
    """Of two runners, one resigns and the other's clock runs out: the page used to name only
    one of them, and not as the mail did."""
    with time_machine.travel(START, tick=False):
        race = make_race(2, clock="P3D")
        quitter = Seat.objects.get(game=race, index=0)
        core.game_resign(game_id=race.pk, user=quitter.user)
    with time_machine.travel(LATE, tick=False):
        assert sweeps.deadlines_sweep() == 1
    race.refresh_from_db()
    assert (race.status, race.result_reason) == (Game.Status.FINISHED, "timeout")
    names = [s.name for s in race.seats.order_by("index")]
    how = f"{names[0]} resigned and {names[1]} ran out of time"
    page = Client().get(race.get_absolute_url()).content.decode()
    assert f"</strong> ({how})." in page
    # The winner left too (placed by cells covered): no seat is drawn crossed out as "out".
    assert "seat dropped" not in page
    row = Outbox.objects.get(game=race, kind="game_over", seat=1)
    with time_machine.travel(LATE + timedelta(minutes=5), tick=False):
        assert outbox.outbox_send(outbox_id=row.pk) == "sent"
    assert f"won ({names[0]} resigned and you ran out of time)." in mail.outbox[-1].body


@pytest.mark.django_db
def test_the_sweep_claims_expired_seats_with_one_query_that_skips_locked_games() -> None:
    # That the query walks the index `seat_deadline` shows at scale: see bench/sweep.py.
    with time_machine.travel(START, tick=False):
        games = [make_game(make_player(), make_player()) for _ in range(3)]
    with time_machine.travel(LATE, tick=False), CaptureQueriesContext(connection) as queries:
        assert sweeps.deadlines_sweep() == 3
    claims = [q["sql"] for q in queries if "SKIP LOCKED" in q["sql"]]
    assert len(claims) == 1
    assert (
        claims[0].startswith('SELECT "games_seat"."id"')
        and 'FOR UPDATE OF "games_game"' in claims[0]
    )
    assert '"games_seat"."deadline" <=' in claims[0]
    assert all(Game.objects.get(pk=g.pk).status == Game.Status.ABORTED for g in games)


def _sweep_queries(games: int) -> tuple[int, list[Game]]:
    """Time out `games` two-seat games that had a move, in one batch; the queries it took."""
    with time_machine.travel(START, tick=False):
        made = [make_game(make_player(), make_player()) for _ in range(games)]
        for game in made:
            play_one(game)
    with time_machine.travel(LATE, tick=False), CaptureQueriesContext(connection) as queries:
        assert sweeps.deadlines_sweep(batch_size=50) == games
    return len(queries), made


@pytest.mark.django_db
def test_a_batch_of_timeouts_takes_the_same_queries_for_5_games_as_for_40() -> None:
    few, _ = _sweep_queries(5)
    many, games = _sweep_queries(40)
    assert few == many
    # Ratings (games/archive/ratings.py) add five for the batch: the rows made if new, locked,
    # the last number, the new ratings, the changes.
    assert many <= 21
    for game in games:
        game.refresh_from_db()
        assert game.status == Game.Status.FINISHED and game.ply == 2
        assert sorted(game.seats.values_list("place", flat=True)) == [1, 2]
    over = Outbox.objects.filter(kind=Outbox.Kind.GAME_OVER, ply=2, game__in=games)
    assert over.count() == 80


@pytest.mark.django_db
def test_one_batch_ends_some_games_aborts_others_and_drops_a_seat_where_play_goes_on() -> None:
    with time_machine.travel(START, tick=False):
        lost = make_game(make_player(), make_player())
        play_one(lost)
        unplayed = make_game(make_player(), make_player())
        three = make_game(make_player(), make_player(), make_player())
        play_one(three)
        other = make_game(make_player(), make_player())
    loser, dropped = to_move(lost), to_move(three)
    with time_machine.travel(START + timedelta(days=2), tick=False):
        play_one(other)  # its next deadline is a day after the others'
    with time_machine.travel(LATE, tick=False):
        assert sweeps.deadlines_sweep() == 3
    for game in (lost, unplayed, three, other):
        game.refresh_from_db()
    assert lost.status == Game.Status.FINISHED
    assert lost.seats.get(index=loser).place == 2
    assert unplayed.status == Game.Status.ABORTED and unplayed.ply == 0
    assert three.status == Game.Status.ACTIVE and three.state is not None
    assert three.state["dropped"] == [dropped]
    assert Seat.objects.get(game=three, index=to_move(three)).deadline == LATE + timedelta(days=3)
    assert other.status == Game.Status.ACTIVE and other.ply == 1
    over = Outbox.objects.filter(kind=Outbox.Kind.GAME_OVER)
    assert sorted(over.values_list("game_id", flat=True)) == sorted(
        [lost.pk] * 2 + [unplayed.pk] * 2
    )


@pytest.mark.django_db
def test_a_game_that_cannot_be_timed_out_is_left_and_the_rest_of_its_batch_is_not() -> None:
    with time_machine.travel(START, tick=False):
        games = [make_game(make_player(), make_player()) for _ in range(4)]
        for game in games:
            play_one(game)
    broken = games[1]
    Game.objects.filter(pk=broken.pk).update(state={"not": "a corn maze"})
    with time_machine.travel(LATE, tick=False):
        assert sweeps.deadlines_sweep() == 3
        assert sweeps.deadlines_sweep() == 0  # the broken one is tried again, and fails again
    statuses = {g.pk: g.status for g in Game.objects.filter(pk__in=[g.pk for g in games])}
    assert statuses.pop(broken.pk) == Game.Status.ACTIVE
    assert set(statuses.values()) == {Game.Status.FINISHED}
    assert not Move.objects.filter(game=broken, move={"timeout": True}).exists()
    assert Seat.objects.filter(game=broken, deadline__lt=LATE).count() == 1


@pytest.mark.django_db
def test_a_due_reminder_becomes_one_mail_and_a_move_cancels_it(
    queued: Queued, django_capture_on_commit_callbacks
) -> None:
    with time_machine.travel(START, tick=False):
        game = make_game(make_player(), make_player())
    seat = Seat.objects.get(game=game, deadline__isnull=False)
    due = START + timedelta(days=3) * 4 / 5
    with time_machine.travel(due - timedelta(seconds=1), tick=False):
        assert sweeps.reminders_sweep() == 0
    with time_machine.travel(due, tick=False), django_capture_on_commit_callbacks(execute=True):
        assert sweeps.reminders_sweep() == 1
        assert sweeps.reminders_sweep() == 0
    (mail,) = Outbox.objects.filter(kind=Outbox.Kind.REMINDER)
    assert (mail.game_id, mail.seat, mail.ply, mail.user_id) == (
        game.pk,
        seat.index,
        0,
        seat.user_id,
    )
    assert mail.pk in queued.mails
    assert not Reminder.objects.exists()

    # The other player's turn starts; they move a second before their reminder is due.
    turn = due + timedelta(hours=1)
    with time_machine.travel(turn, tick=False):
        play_one(game)
    reminder = Reminder.objects.get()
    assert (reminder.ply, reminder.due) == (1, turn + timedelta(days=3) * 4 / 5)
    with time_machine.travel(reminder.due - timedelta(seconds=1), tick=False):
        play_one(game)
    assert Reminder.objects.get().ply == 2
    with time_machine.travel(reminder.due, tick=False):
        assert sweeps.reminders_sweep() == 0
    assert Outbox.objects.filter(kind=Outbox.Kind.REMINDER).count() == 1


@pytest.mark.django_db
def test_a_bot_turn_whose_task_was_lost_is_queued_again(queued: Queued) -> None:
    human = make_player()
    with time_machine.travel(START, tick=False), core.bot_tasks_paused():
        game = make_game(human, bots=("simple",))
        if to_move(game) == 0:
            play_one(game)
    assert to_move(game) == 1 and not queued.of("games.tasks.bot_turn")
    with time_machine.travel(START + timedelta(seconds=59), tick=False):
        assert sweeps.bot_turns_sweep() == 0
    with time_machine.travel(START + timedelta(seconds=61), tick=False):
        assert sweeps.bot_turns_sweep() == 1
    game.refresh_from_db()
    assert queued.of("games.tasks.bot_turn") == [(game.pk, game.ply)]
    # The task runs (twice, as a redelivered one might): the bot plays once.
    with time_machine.travel(START + timedelta(seconds=62), tick=False):
        core.bot_turn_play(game_id=game.pk, ply=game.ply)
        core.bot_turn_play(game_id=game.pk, ply=game.ply)
    assert Move.objects.filter(game=game, seat=1).count() == 1


@pytest.mark.django_db
def test_a_mail_whose_task_was_lost_is_queued_again_within_a_minute(
    queued: Queued, django_capture_on_commit_callbacks
) -> None:
    with time_machine.travel(START, tick=False):
        game = make_game(make_player(), make_player())
    (mail,) = Outbox.objects.all()
    queued.clear()  # its task is lost
    grace = outbox.task_grace()
    assert grace == timedelta(minutes=1)  # four sweeps of 15 s
    with time_machine.travel(START + grace - timedelta(seconds=1), tick=False):
        assert sweeps.mails_sweep() == 0
    with (
        time_machine.travel(START + grace, tick=False),
        django_capture_on_commit_callbacks(execute=True),
    ):
        assert sweeps.mails_sweep() == 1
        assert sweeps.mails_sweep() == 0  # queued again just now
    assert queued.mails == [mail.pk]
    # Lost again: queued again a minute later, until it is sent.
    queued.clear()
    with (
        time_machine.travel(START + 2 * grace, tick=False),
        django_capture_on_commit_callbacks(execute=True),
    ):
        assert sweeps.mails_sweep() == 1
    assert queued.mails == [mail.pk]
    with time_machine.travel(START + 2 * grace, tick=False):
        assert outbox.outbox_send(outbox_id=mail.pk) == "sent"
    with time_machine.travel(START + 3 * grace, tick=False):
        assert sweeps.mails_sweep() == 0
    assert game.pk == mail.game_id


def test_the_mail_sweep_walks_the_partial_index_of_pending_mails() -> None:
    # Its cost grows with the mails due, not with the mails sent (see bench/sweep.py for the
    # seats): the claim filters on exactly the partial index's condition and orders by its key.
    sql = str(outbox.due_mails(START).query)
    assert '"games_outbox"."status" = pending' in sql
    assert '"games_outbox"."next_try_at" <=' in sql
    assert sql.endswith('ORDER BY "games_outbox"."next_try_at" ASC')
    (index,) = [i for i in Outbox._meta.indexes if i.name == "outbox_pending_next_try"]
    assert index.fields == ["next_try_at"] and str(index.condition) == str(Q(status="pending"))


@pytest.mark.django_db
def test_one_failing_part_does_not_stop_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    with time_machine.travel(START, tick=False):
        make_game(make_player(), make_player())

    def broken() -> int:
        raise RuntimeError("broken")

    monkeypatch.setattr(sweeps, "deadlines_sweep", broken)
    with time_machine.travel(START + timedelta(days=3) * 4 / 5, tick=False):
        report = sweeps.sweep()
    assert report.timeouts == 0 and report.reminders == 1


@pytest.mark.django_db(transaction=True)
def test_four_sweeps_at_once_time_out_160_games_once_each(queued: Queued) -> None:
    a, b = make_player(), make_player()
    with time_machine.travel(START, tick=False):
        games = [make_game(a, b) for _ in range(160)]
        for game in games[::2]:
            play_one(game)  # half with a move (a loss), half without (aborted)
    queued.clear()
    results: list[object] = [None] * 4
    barrier = threading.Barrier(4)

    def run(index: int) -> None:
        try:
            with time_machine.travel(LATE, tick=False):
                barrier.wait(timeout=30)
                results[index] = sweeps.deadlines_sweep(batch_size=5)
        except BaseException as exc:  # noqa: BLE001
            results[index] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert all(isinstance(r, int) for r in results), results
    assert sum(results) == 160, results  # type: ignore[arg-type]

    assert not Game.objects.filter(status=Game.Status.ACTIVE).exists()
    assert Game.objects.filter(status=Game.Status.FINISHED).count() == 80
    assert Game.objects.filter(status=Game.Status.ABORTED).count() == 80
    assert Move.objects.filter(move={"timeout": True}).count() == 80
    assert not Seat.objects.filter(deadline__isnull=False).exists()
    # One "game over" mail for each player of each game, each queued once.
    over = list(Outbox.objects.filter(kind=Outbox.Kind.GAME_OVER).values_list("pk", flat=True))
    assert len(over) == 320
    assert sorted(queued.mails) == sorted(over)
    connection.close()
