"""Clocks: deadlines, reminders, a move that comes too late, and moves racing each other and
the sweep on PostgreSQL."""

from __future__ import annotations

import ast
import random
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core import mail
from django.db import connection, connections
from django.test import Client
from django.urls import reverse

from games.engines import robotmaze
from games.mail import outbox, watching
from games.models import Game, Move, Outbox, Reminder, Seat
from games.play import challenges, core, sweeps
from games.ui import wording
from tests.test_robotmaze_site import robot_game
from tests.worker_fixtures import (
    BASE_DIR,
    Queued,
    legal_move,
    make_game,
    make_player,
    play_one,
    player_at,
    to_move,
)

# Ahead of the real clock, so that nothing is overdue by accident outside time travel.
START = datetime.now(UTC).replace(microsecond=0) + timedelta(days=1)
pytestmark = pytest.mark.usefixtures("queued")


@pytest.mark.django_db
def test_the_seat_to_move_gets_a_deadline_and_a_reminder_at_a_fifth_of_its_clock() -> None:
    with time_machine.travel(START, tick=False):
        game = make_game(make_player(), make_player())
    first = to_move(game)
    seats = {s.index: s for s in game.seats.all()}
    assert seats[first].deadline == START + timedelta(days=3)
    assert seats[1 - first].deadline is None
    (reminder,) = Reminder.objects.all()
    assert (reminder.seat_id, reminder.ply) == (seats[first].pk, 0)
    assert reminder.due == START + timedelta(days=3) - timedelta(days=3) / 5

    with time_machine.travel(START + timedelta(hours=5), tick=False):
        play_one(game)
    # The mover's reminder is gone; the other seat's turn starts with a full clock.
    (reminder,) = Reminder.objects.all()
    assert reminder.seat_id == seats[1 - first].pk and reminder.ply == 1
    seat = Seat.objects.get(pk=seats[1 - first].pk)
    assert seat.deadline == START + timedelta(hours=5, days=3)


@pytest.mark.django_db
def test_a_30_day_clock_gives_30_days() -> None:
    with time_machine.travel(START, tick=False):
        game = make_game(make_player(), make_player(), clock="P30D")
    seat = Seat.objects.get(game=game, deadline__isnull=False)
    assert seat.deadline == START + timedelta(days=30)
    assert Reminder.objects.get().due == START + timedelta(days=24)


@pytest.mark.django_db
def test_a_move_after_its_deadline_is_refused_before_the_sweep_runs() -> None:
    with time_machine.travel(START, tick=False):
        game = make_game(make_player(), make_player())
        play_one(game)
    mover = to_move(game)

    def submit() -> None:
        core.move_submit(
            game_id=game.pk, user=player_at(game, mover), number=1, move=legal_move(game)
        )

    def refused():  # type: ignore[no-untyped-def]
        return pytest.raises(core.MoveRefused, match="Your time for this move has run out")

    with time_machine.travel(START + timedelta(days=3, seconds=1), tick=False), refused():
        submit()
    game.refresh_from_db()
    assert game.ply == 1 and game.status == Game.Status.ACTIVE
    # Exactly at the deadline is too late as well; a second before is in time.
    with time_machine.travel(START + timedelta(days=3), tick=False), refused():
        submit()
    with time_machine.travel(START + timedelta(days=3) - timedelta(seconds=1), tick=False):
        submit()
    game.refresh_from_db()
    assert game.ply == 2


@pytest.mark.django_db
def test_the_game_page_shows_the_rule_and_each_clock(client) -> None:  # type: ignore[no-untyped-def]
    with time_machine.travel(START, tick=False):
        game = make_game(make_player(), make_player())
        page = client.get(reverse("game", args=[game.pk])).content.decode()
    assert "3 days for each move. A player who runs out of time loses." in page
    assert wording.VACATION_FIRST in page
    deadline = Seat.objects.get(game=game, deadline__isnull=False).deadline
    assert deadline is not None
    assert f'data-deadline="{deadline.isoformat()}"' in page
    assert "3 days, 0:00:00" in page

    three = make_game(make_player(), make_player(), make_player(), clock="P30D")
    page = client.get(reverse("game", args=[three.pk])).content.decode()
    assert "30 days for each move. A player who runs out of time is dropped from the game." in page

    # Over, the game names its clock, and no longer what running out of it would cost.
    with time_machine.travel(START, tick=False):
        core.game_resign(game_id=game.pk, user=game.seats.get(index=0).user)
        page = client.get(reverse("game", args=[game.pk])).content.decode()
    assert '<p class="clock-rule" id="clock-rule">3 days for each move.</p>' in page
    assert "runs out of time" not in page and wording.VACATION_FIRST not in page


@pytest.mark.django_db
def test_a_game_that_is_over_for_a_player_offers_them_no_move(queued) -> None:  # type: ignore[no-untyped-def]
    """An aborted game's state still names the seat that was to move, and a dropped seat is
    still a seat of the game: neither page offers a move, a set-up, a resignation or a gift."""

    def page_of(user, game: Game) -> str:  # type: ignore[no-untyped-def]
        client = Client()
        client.force_login(user)
        return client.get(reverse("game", args=[game.pk])).content.decode()

    ann, bob = make_player(), make_player()
    aborted = make_game(ann, bob)
    mover = player_at(aborted, to_move(aborted))
    challenges.game_abort(game_id=aborted.pk, user=mover)
    assert 'id="move-form"' not in page_of(mover, aborted)

    robot = robot_game(ann, bob)
    core.move_submit(
        game_id=robot.pk,
        user=ann,
        number=0,
        move={"warehouse": robotmaze.random_warehouse(random.Random(1))},
    )
    with time_machine.travel(datetime.now(UTC) + timedelta(days=3, seconds=5), tick=False):
        assert sweeps.deadlines_sweep() == 1
    robot.refresh_from_db()
    assert robot.status == Game.Status.ABORTED
    page = page_of(bob, robot)
    assert 'id="move-form"' not in page and "Random warehouse" not in page

    three = make_game(make_player(), make_player(), make_player())
    play_one(three)
    late = to_move(three)
    with time_machine.travel(datetime.now(UTC) + timedelta(days=3, seconds=5), tick=False):
        assert sweeps.deadlines_sweep() == 1
        three.refresh_from_db()
        assert three.status == Game.Status.ACTIVE
        dropped = page_of(player_at(three, late), three)
        playing = page_of(player_at(three, to_move(three)), three)
    assert 'class="resign' not in dropped and 'class="give-time"' not in dropped
    assert 'class="resign' in playing


@pytest.mark.django_db
def test_the_poll_marks_a_signed_in_player_as_watching(client) -> None:  # type: ignore[no-untyped-def]
    game = make_game(make_player(), make_player())
    player = player_at(game, 0)
    url = reverse("game", args=[game.pk]) + f"?since={game.version}"
    client.get(url, HTTP_HX_REQUEST="true")
    assert watching.watching_until(game_id=game.pk, user_id=player.pk) is None
    client.force_login(player)
    with time_machine.travel(START, tick=False):
        assert client.get(url, HTTP_HX_REQUEST="true").status_code == 204
        until = START + timedelta(seconds=watching.WATCHING_SECONDS)
        assert watching.watching_until(game_id=game.pk, user_id=player.pk) == until
        other = player_at(game, 1).pk
        assert watching.watching_until(game_id=game.pk, user_id=other) is None
    with time_machine.travel(until, tick=False):  # the page stopped polling: they left
        assert watching.watching_until(game_id=game.pk, user_id=player.pk) is None


# --- deadlines that move ---------------------------------------------------------------------

CLOCK = timedelta(days=3)


def _reminder_due(game: Game) -> datetime:
    (reminder,) = Reminder.objects.filter(seat__game=game)
    return reminder.due


@pytest.mark.django_db
@pytest.mark.parametrize("by", [timedelta(days=2), -timedelta(days=1, hours=12)])
def test_a_deadline_moved_later_or_earlier_takes_its_reminder_along(
    by: timedelta, queued: Queued, django_capture_on_commit_callbacks
) -> None:
    with time_machine.travel(START, tick=False):
        game = make_game(make_player(), make_player())
    seat = Seat.objects.get(game=game, deadline__isnull=False)
    old_due = START + CLOCK * 4 / 5
    assert _reminder_due(game) == old_due
    deadline = START + CLOCK + by
    with time_machine.travel(START + timedelta(hours=1), tick=False):
        core.seat_deadline_move(game_id=game.pk, seat_index=seat.index, deadline=deadline)
    seat.refresh_from_db()
    assert seat.deadline == deadline
    due = deadline - CLOCK / 5
    assert _reminder_due(game) == due
    # Nothing before the new time; moved later, nothing at the old time either.
    for at in [due - timedelta(seconds=1)] + ([old_due] if old_due < due else []):
        with time_machine.travel(at, tick=False):
            assert sweeps.reminders_sweep() == 0
    with time_machine.travel(due, tick=False), django_capture_on_commit_callbacks(execute=True):
        assert sweeps.reminders_sweep() == 1  # before the new deadline, with a fifth left
        assert sweeps.deadlines_sweep() == 0
    (row,) = Outbox.objects.filter(kind="reminder")
    assert row.pk in queued.mails
    with time_machine.travel(due, tick=False):
        assert outbox.outbox_send(outbox_id=row.pk) == "sent"
    assert "14:24:00 left" in mail.outbox[-1].body  # a fifth of 3 days
    with time_machine.travel(deadline, tick=False):
        assert sweeps.deadlines_sweep() == 1  # and the seat runs out at the new deadline


@pytest.mark.django_db
def test_only_a_seat_to_move_has_a_deadline_to_move() -> None:
    game = make_game(make_player(), make_player())
    mover = to_move(game)
    later = datetime.now(UTC) + timedelta(days=5)
    with pytest.raises(core.GameError, match="this seat is not to move"):
        core.seat_deadline_move(game_id=game.pk, seat_index=1 - mover, deadline=later)
    with pytest.raises(core.GameError, match="no such seat"):
        core.seat_deadline_move(game_id=game.pk, seat_index=7, deadline=later)
    core.game_resign(game_id=game.pk, user=player_at(game, 0))
    with pytest.raises(core.GameError, match="not running"):
        core.seat_deadline_move(game_id=game.pk, seat_index=mover, deadline=later)
    assert not Seat.objects.filter(game=game, deadline__isnull=False).exists()
    assert not Reminder.objects.exists()


def _seat_form(seat: Seat, deadline: datetime | None) -> dict[str, str]:
    """The admin's change form of a seat as a person sends it, with another deadline."""

    def split(name: str, value: datetime | None) -> dict[str, str]:
        if value is None:
            return {f"{name}_0": "", f"{name}_1": ""}
        return {f"{name}_0": value.strftime("%Y-%m-%d"), f"{name}_1": value.strftime("%H:%M:%S")}

    return {
        "game": str(seat.game_id),
        "index": str(seat.index),
        "user": str(seat.user_id or ""),
        "bot": seat.bot,
        "place": "",
        **split("deadline", deadline),
        **split("joined_at", seat.joined_at),
        **split("ready_at", seat.ready_at),
        **split("finished_at", seat.finished_at),
    }


@pytest.mark.django_db
def test_the_admin_moves_a_deadline_and_its_reminder_follows(admin_client) -> None:  # type: ignore[no-untyped-def]
    with time_machine.travel(START, tick=False):
        game = make_game(make_player(), make_player())
    seat = Seat.objects.get(game=game, deadline__isnull=False)
    url = reverse("admin:games_seat_change", args=[seat.pk])
    page = admin_client.get(url).content.decode()
    assert 'name="deadline_0"' in page
    for deadline in (START + CLOCK + timedelta(days=4), START + timedelta(days=1)):
        response = admin_client.post(url, _seat_form(seat, deadline))
        assert response.status_code == 302, response.content.decode()
        seat.refresh_from_db()
        assert seat.deadline == deadline
        assert _reminder_due(game) == deadline - CLOCK / 5
    # A seat to move keeps a deadline; a seat not to move gets none. Nothing changes.
    response = admin_client.post(url, _seat_form(seat, None))
    assert response.status_code == 200
    assert "A seat to move needs a deadline" in response.content.decode()
    waiting = Seat.objects.get(game=game, deadline__isnull=True)
    response = admin_client.post(
        reverse("admin:games_seat_change", args=[waiting.pk]), _seat_form(waiting, START)
    )
    assert response.status_code == 200
    assert "this seat is not to move" in response.content.decode()
    assert list(Seat.objects.filter(game=game).values_list("deadline", flat=True)) in (
        [seat.deadline, None],
        [None, seat.deadline],
    )
    assert _reminder_due(game) == START + timedelta(days=1) - CLOCK / 5
    # The game's page shows the seats' deadlines, but they move only on the seat's page.
    page = admin_client.get(reverse("admin:games_game_change", args=[game.pk])).content.decode()
    assert "seats-0-index" in page and "seats-0-deadline" not in page


def test_only_deadlines_set_writes_a_seat_deadline() -> None:
    """Everything that sets a deadline goes through services.deadlines_set, which keeps the
    reminder in step: no other code assigns `.deadline` or updates it in bulk."""
    writers = []
    for path in sorted((BASE_DIR / "games").rglob("*.py")):
        if "migrations" in path.parts:
            continue
        tree = ast.parse(path.read_text())
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                assigned = isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign) and any(
                    isinstance(t, ast.Attribute) and t.attr == "deadline"
                    for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                )
                updated = (
                    isinstance(node, ast.Call)
                    and any(k.arg == "deadline" for k in node.keywords)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "update"
                )
                if assigned or updated:
                    writers.append(f"{path.relative_to(BASE_DIR)}:{function.name}")
    assert writers == ["games/play/deadlines.py:deadlines_set"]


# --- races on PostgreSQL, with real threads and their own connections -------------------------


def _in_thread(work, results: list, index: int) -> None:  # type: ignore[no-untyped-def]
    try:
        results[index] = work()
    except BaseException as exc:  # noqa: BLE001 - reported by the main thread
        results[index] = exc
    finally:
        connections.close_all()


@pytest.mark.django_db(transaction=True)
def test_20_threads_posting_the_same_move_apply_it_once(queued: Queued, settings) -> None:
    # Each waits its turn for the lock, however busy the machine (tests/test_lock_wait.py has
    # the bound).
    settings.GAME_LOCK_TIMEOUT_MS = 60_000
    threads_count, rounds = 20, 50
    players = [make_player(), make_player()]
    game = make_game(*players)
    plan: dict[str, object] = {}
    results: list[object] = [None] * threads_count
    start = threading.Barrier(threads_count + 1)
    done = threading.Barrier(threads_count + 1)

    def worker(index: int) -> None:
        try:
            for _ in range(rounds):
                start.wait()

                def post() -> object:
                    return core.move_submit(
                        game_id=plan["game"],  # type: ignore[arg-type]
                        user=plan["user"],  # type: ignore[arg-type]
                        number=plan["ply"],  # type: ignore[arg-type]
                        move=plan["move"],  # type: ignore[arg-type]
                    )

                try:
                    results[index] = post()
                except core.MoveRefused as exc:
                    results[index] = exc
                done.wait()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(threads_count)]
    for t in threads:
        t.start()
    finished = False
    try:
        for _ in range(rounds):
            game.refresh_from_db()
            if game.status != Game.Status.ACTIVE:
                game = make_game(*players)
            seat = to_move(game)
            plan.update(
                game=game.pk, user=player_at(game, seat), ply=game.ply, move=legal_move(game)
            )
            start.wait(timeout=60)
            done.wait(timeout=60)
            applied = [r for r in results if isinstance(r, Move)]
            refused = [r for r in results if isinstance(r, core.MoveRefused)]
            assert len(applied) == 1, results
            assert len(refused) == threads_count - 1, results
            for exc in refused:
                assert "played that move already" in str(exc) or "The game is over" in str(exc)
            assert Move.objects.filter(game_id=plan["game"], ply=plan["ply"] + 1).count() == 1  # type: ignore[operator]
        finished = True
    finally:
        if not finished:
            # Release the threads from a failed round; after the last round they end by
            # themselves (aborting then would break a barrier they are still leaving).
            start.abort()
            done.abort()
        for t in threads:
            t.join(timeout=30)
    connection.close()


def _waiting_for_a_lock(timeout: float = 30.0) -> None:
    """Return once another backend of this database is waiting for a lock (a positive signal,
    read from pg_stat_activity), or fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    with connections["default"].cursor() as cursor:
        while time.monotonic() < deadline:
            # Read afresh: inside a transaction the statistics are a snapshot.
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            if cursor.fetchone()[0]:
                return
            time.sleep(0.01)
    raise AssertionError("nobody waited for the game's lock")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "first, when",
    [
        ("move", "before the deadline"),
        ("move", "at the deadline"),
        ("sweep", "at the deadline"),
    ],
)
def test_a_move_and_the_sweep_racing_for_a_game_exactly_one_wins(
    queued: Queued, monkeypatch: pytest.MonkeyPatch, settings, first: str, when: str
) -> None:
    """A move and the sweep on one game, each order forced by the game's lock, not by thread
    timing: `first` holds the lock while the other comes (the sweep skips a locked game; a
    move waits for it). Exactly one acts, and which is decided by the clock (frozen for both):
    before the deadline the move, from the deadline on the sweep (the move is refused)."""
    if connection.vendor != "postgresql":
        pytest.skip("the waiting move is seen in PostgreSQL's pg_stat_activity")
    settings.GAME_LOCK_TIMEOUT_MS = 30_000  # the move waits for the sweep, however slow
    game = make_game(make_player(), make_player())
    play_one(game)  # ply 1: a timeout now loses the game instead of aborting it
    mover = to_move(game)
    deadline = START + timedelta(days=2)
    Seat.objects.filter(game=game, index=mover).update(deadline=deadline)
    move = legal_move(game)
    user = player_at(game, mover)
    results: dict[str, object] = {}
    now = deadline - timedelta(seconds=1) if when == "before the deadline" else deadline

    def in_thread(name: str, work) -> None:  # type: ignore[no-untyped-def]
        try:
            with time_machine.travel(now, tick=False):
                results[name] = work()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            results[name] = exc
        finally:
            connections.close_all()

    with time_machine.travel(now, tick=False):
        if first == "move":
            # The sweep runs, to its end, while the move holds the game's lock.
            def read(locked: Game, view: dict) -> dict:
                thread = threading.Thread(target=in_thread, args=("sweep", sweeps.deadlines_sweep))
                thread.start()
                thread.join(timeout=30)
                assert not thread.is_alive()
                return move

            try:
                results["move"] = core.move_read_and_submit(
                    game_id=game.pk, user=user, read_number=lambda locked: 1, read=read
                )
            except core.GameError as exc:
                results["move"] = exc
            assert results["sweep"] == 0, results  # it skipped the locked game
        else:
            # The move comes while the sweep holds the lock, and waits for it.
            real = core.seats_time_out
            waiting = threading.Thread(
                target=in_thread,
                args=(
                    "move",
                    lambda: core.move_submit(game_id=game.pk, user=user, number=1, move=move),
                ),
            )

            def seats_time_out(expired):  # type: ignore[no-untyped-def]
                waiting.start()
                _waiting_for_a_lock()
                return real(expired)

            monkeypatch.setattr(core, "seats_time_out", seats_time_out)
            results["sweep"] = sweeps.deadlines_sweep()
            monkeypatch.setattr(core, "seats_time_out", real)
            waiting.join(timeout=30)
            assert not waiting.is_alive()
        # The next sweep ends a game the first one skipped, if its time is up.
        results["next sweep"] = sweeps.deadlines_sweep()
    game.refresh_from_db()
    (second,) = Move.objects.filter(game=game, ply=2)
    if when == "before the deadline":
        assert isinstance(results["move"], Move), results
        assert results["next sweep"] == 0
        assert second.move == move and game.status == Game.Status.ACTIVE
        assert Seat.objects.get(game=game, index=mover).deadline is None
    else:
        assert isinstance(results["move"], core.MoveRefused), results
        refused = (
            "The game is over." if first == "sweep" else "Your time for this move has run out."
        )
        assert str(results["move"]) == refused
        assert (results["sweep"], results["next sweep"]) == ((0, 1) if first == "move" else (1, 0))
        assert second.move == {"timeout": True} and second.seat == mover
        assert game.status == Game.Status.FINISHED
    connection.close()
