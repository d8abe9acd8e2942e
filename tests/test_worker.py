"""A real Celery worker and beat (a subprocess, `celery -A mazesite worker --beat`) against the
Redis on localhost, on this test's database, and a real SMTP server (aiosmtpd) in the test.
Deadlines are put in the past directly; nothing is slept through but the worker's own
one-second sweeps, and "nothing more happened" is shown by sweeps that finished after it."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connections

from games import tasks
from games.models import Game, Move, Outbox, Seat
from games.play import core, sweeps
from tests.worker_fixtures import (
    Inbox,
    WorkerProcess,
    broker_unreachable,
    make_game,
    make_player,
    play_one,
    player_at,
    text_and_html,
    to_move,
    wait_until,
)

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def _status(game: Game) -> str:
    game.refresh_from_db()
    return game.status


def test_the_worker_ends_a_game_whose_deadline_passed_and_mails_each_player_once(
    celery_worker_process: WorkerProcess, smtp_server: Inbox
) -> None:
    ann, bob = make_player("ann"), make_player("bob")
    game = make_game(ann, bob)
    first = to_move(game)
    # The worker mails the first mover that it is their turn ...
    (turn_mail,) = smtp_server.wait_for(1)
    assert turn_mail["To"] == player_at(game, first).email
    play_one(game)
    loser = to_move(game)
    # ... and then the other player.
    assert len(smtp_server.wait_for(2)) == 2

    # The loser's deadline passes; beat sweeps every second, and two more sweeps run at once.
    Seat.objects.filter(game=game, index=loser).update(
        deadline=datetime.now(UTC) - timedelta(seconds=1)
    )
    errors: list[BaseException] = []

    def sweep_now() -> None:
        try:
            tasks.sweep_deadlines.delay()
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)

    sweeps = [threading.Thread(target=sweep_now) for _ in range(2)]
    for t in sweeps:
        t.start()
    for t in sweeps:
        t.join()
    assert not errors
    wait_until(
        lambda: _status(game) == Game.Status.FINISHED,
        timeout=60,
        what=f"the worker to end the game\n{celery_worker_process.output()[-3000:]}",
    )
    places = dict(game.seats.values_list("index", "place"))
    assert places == {loser: 2, 1 - loser: 1}
    assert game.result_reason == "timeout"
    assert list(Move.objects.filter(game=game, ply=2).values_list("seat", "move")) == [
        (loser, {"timeout": True})
    ]

    messages = smtp_server.wait_for(4)
    wait_until(
        lambda: not Outbox.objects.filter(status="pending").exists(),
        timeout=30,
        what="every mail to be sent",
    )
    celery_worker_process.wait_for_sweeps(3)  # nothing more arrives meanwhile
    messages = list(smtp_server.messages)
    assert sorted((m["To"], m["Subject"]) for m in messages) == sorted(
        [
            (player_at(game, first).email, f"Your move in Corn maze #{game.pk}"),
            (player_at(game, 1 - first).email, f"Your move in Corn maze #{game.pk}"),
            (player_at(game, loser).email, f"Corn maze #{game.pk} is over: you lost"),
            (player_at(game, 1 - loser).email, f"Corn maze #{game.pk} is over: you won"),
        ]
    )
    for message in messages:
        # A long header may be folded onto a second line, which the parser keeps as a space.
        unsubscribe = str(message["List-Unsubscribe"]).strip()
        assert unsubscribe.startswith("<http") and unsubscribe.endswith("/>")
        assert "/unsubscribe/" in unsubscribe
        assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
        assert message.get_content_type() == "multipart/alternative"
        text, html = text_and_html(message)
        assert f"/games/{game.pk}/" in text and f"/games/{game.pk}/" in html
    assert set(Outbox.objects.values_list("status", flat=True)) == {"sent"}
    assert Outbox.objects.count() == 4


def test_the_sweep_picks_up_a_bot_turn_whose_task_was_lost(
    celery_worker_process: WorkerProcess, smtp_server: Inbox
) -> None:
    human = make_player("cid")
    # Made while bot tasks are paused: as if the worker had died with the bot's task.
    with core.bot_tasks_paused():
        game = make_game(human, bots=("simple",))
        if to_move(game) == 0:
            play_one(game)
    assert to_move(game) == 1
    ply = game.ply
    Seat.objects.filter(game=game, index=1).update(
        deadline=datetime.now(UTC) - timedelta(seconds=90) + timedelta(days=3)
    )
    wait_until(
        lambda: Move.objects.filter(game=game, ply=ply + 1, seat=1).exists(),
        timeout=60,
        what=f"the bot to move\n{celery_worker_process.output()[-3000:]}",
    )
    game.refresh_from_db()
    if game.status == Game.Status.ACTIVE:
        # The worker mails the person that it is their turn again.
        wait_until(
            lambda: any(m["Subject"].startswith("Your move") for m in smtp_server.messages),
            timeout=30,
            what="the your-turn mail",
        )
    assert Move.objects.filter(game=game, seat=1).count() == 1


def test_a_mail_whose_queueing_was_lost_with_the_broker_goes_out_once_it_is_back(
    celery_worker_process: WorkerProcess, smtp_server: Inbox
) -> None:
    game = make_game(make_player("eve"), make_player("fay"))
    smtp_server.wait_for(1)
    with broker_unreachable():
        play_one(game)  # committed; its mail could not be queued
    row = Outbox.objects.get(game=game, ply=1)
    assert row.status == "pending"  # and due again a minute after it was made
    # The broker is back. When the mail's time comes, the sweep queues it for the worker.
    with time_machine.travel(row.next_try_at, tick=False):
        assert sweeps.mails_sweep() == 1
    wait_until(
        lambda: Outbox.objects.get(pk=row.pk).status == "sent",
        timeout=30,
        what=f"the mail\n{celery_worker_process.output()[-3000:]}",
    )
    celery_worker_process.wait_for_sweeps(2)
    first, second = smtp_server.messages
    assert second["To"] == player_at(game, to_move(game)).email != first["To"]
    assert Outbox.objects.get(pk=row.pk).attempts == 1
    connections.close_all()


def test_mails_go_out_once_each_when_the_worker_is_killed_mid_send_and_started_again(
    celery_worker_process: WorkerProcess, smtp_server: Inbox, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.SWEEP_INTERVAL_SECONDS = 1  # as the worker's: a lost mail is due 4 s after
    players = [make_player() for _ in range(16)]
    # Whoever of the first two games' players moves first: the server holds their mail.
    smtp_server.hold(*(p.email for p in players[:4]))
    games = [make_game(a, b) for a, b in zip(players[::2], players[1::2], strict=True)]
    assert Outbox.objects.count() == 8
    wait_until(
        lambda: len(smtp_server.held) == 2 and Outbox.objects.filter(status="sent").count() == 6,
        timeout=60,
        what=f"six mails sent and two held\n{celery_worker_process.output()[-3000:]}",
    )
    # Killed while it sends the two: the server has not accepted them, and nothing is stored.
    celery_worker_process.kill()
    smtp_server.release()
    held = Outbox.objects.filter(user__email__in=smtp_server.held)
    assert sorted(held.values_list("status", "attempts")) == [("pending", 0), ("pending", 0)]
    assert len(smtp_server.messages) == 6
    celery_worker_process.start()
    wait_until(
        lambda: Outbox.objects.filter(status="sent").count() == 8,
        timeout=60,
        what=f"every mail sent\n{celery_worker_process.output()[-3000:]}",
    )
    celery_worker_process.wait_for_sweeps(2)
    assert sorted(m["To"] for m in smtp_server.messages) == sorted(
        player_at(game, to_move(game)).email for game in games
    )
    assert set(Outbox.objects.values_list("status", "attempts")) == {("sent", 1)}
    connections.close_all()
