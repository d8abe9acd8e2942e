"""The chat mail through a real worker and beat (tests/worker_fixtures.py): a player's message
makes a pending chat mail for the other player; once its delay is over the sweep queues it and
the worker sends it to the SMTP server, once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from games.chat import service as chat
from games.models import Outbox
from tests.worker_fixtures import (
    Inbox,
    WorkerProcess,
    make_game,
    make_player,
    text_and_html,
    wait_until,
)

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_a_chat_mail_goes_out_through_the_sweep_once(
    celery_worker_process: WorkerProcess, smtp_server: Inbox
) -> None:
    ann, bob = make_player("ann"), make_player("bob")
    game = make_game(ann, bob)
    smtp_server.wait_for(1)  # the "your turn" mail of whoever moves first
    chat.chat_post(game_id=game.pk, user=ann, text="See you tomorrow, Bob")
    chat.chat_post(game_id=game.pk, user=make_player("zed_watcher"), text="a spectator's word")
    (row,) = Outbox.objects.filter(kind="chat")
    assert row.user == bob and row.status == "pending"
    # Its ten minutes are over (the deadline is put in the past, as the other worker tests do).
    Outbox.objects.filter(pk=row.pk).update(next_try_at=datetime.now(UTC) - timedelta(seconds=1))
    messages = smtp_server.wait_for(2)
    message = messages[-1]
    assert message["Subject"] == f"New chat messages in Corn maze #{game.pk}"
    assert message["To"] == bob.email
    text, html = text_and_html(message)
    assert "See you tomorrow, Bob" in text and "See you tomorrow, Bob" in html
    assert "a spectator's word" not in text + html
    # The worker marks the row sent as its transaction commits, just after the SMTP answer.
    wait_until(
        lambda: Outbox.objects.filter(pk=row.pk, status="sent").exists(),
        timeout=30,
        what=f"the chat mail marked sent\n{celery_worker_process.output()[-3000:]}",
    )
    row.refresh_from_db()
    assert row.attempts == 1
