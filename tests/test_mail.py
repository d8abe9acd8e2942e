"""Mails: who gets which, the outbox that sends each once, the message itself, preferences,
the digest, unsubscribing without signing in, and the admin's resend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from smtplib import SMTPServerDisconnected

import pytest
import time_machine
from django.core import mail
from django.core.mail.backends.locmem import EmailBackend
from django.db import transaction
from django.test import Client
from django.urls import reverse

from games import notifications, services, sweeps, tasks
from games.guests import guest_create
from games.models import EmailPreferences, Game, Outbox
from tests.worker_fixtures import (
    Queued,
    legal_move,
    make_game,
    make_player,
    play_one,
    player_at,
    to_move,
)

START = datetime.now(UTC).replace(microsecond=0) + timedelta(days=1)
pytestmark = pytest.mark.usefixtures("queued")


def send_all() -> list[str | None]:
    """What the worker would do with every pending mail."""
    return [
        notifications.outbox_send(outbox_id=pk)
        for pk in Outbox.objects.filter(status="pending").values_list("pk", flat=True)
    ]


@pytest.mark.django_db
def test_your_turn_goes_only_to_a_verified_address_and_never_to_a_bot(
    django_capture_on_commit_callbacks,
) -> None:
    verified, unverified, none = (
        make_player(),
        make_player(verified=False),
        make_player(address=False),
    )
    with django_capture_on_commit_callbacks(execute=True):
        games = [make_game(p, bots=("simple",)) for p in (verified, unverified, none)]
    # Whoever is to move: only the verified person's turns make mails.
    rows = list(Outbox.objects.values_list("user_id", "kind"))
    if to_move(games[0]) == 0:
        assert rows == [(verified.pk, "your_turn")]
    else:
        assert rows == []
    assert not Outbox.objects.exclude(user=verified).exists()


@pytest.mark.django_db(transaction=True)
def test_a_move_in_a_transaction_that_rolls_back_queues_no_task_and_no_mail(
    queued: Queued,
) -> None:
    game = make_game(make_player(), make_player())
    queued.clear()
    before = Outbox.objects.count()
    mover = to_move(game)
    with pytest.raises(RuntimeError), transaction.atomic():
        services.move_submit(
            game_id=game.pk, user=player_at(game, mover), number=0, move=legal_move(game)
        )
        assert Outbox.objects.count() == before + 1  # the other player's "your turn" ...
        raise RuntimeError("something later failed")
    assert Outbox.objects.count() == before  # ... gone with the move
    assert queued.calls == []
    # The same move committed queues exactly one mail.
    services.move_submit(
        game_id=game.pk, user=player_at(game, mover), number=0, move=legal_move(game)
    )
    (row,) = Outbox.objects.filter(kind="your_turn", ply=1)
    assert queued.calls == [("games.tasks.mail_send", (row.pk,))]


@pytest.mark.django_db
def test_a_your_turn_mail_has_text_html_a_link_and_one_click_unsubscribe(settings) -> None:  # type: ignore[no-untyped-def]
    settings.SITE_URL = "https://mazes.example"
    with time_machine.travel(START, tick=False):
        game = make_game(make_player("ann"), make_player("bob"))
        (row,) = Outbox.objects.all()
        assert notifications.outbox_send(outbox_id=row.pk) == "sent"
        assert notifications.outbox_send(outbox_id=row.pk) is None  # a second task: nothing
    (message,) = mail.outbox
    player = player_at(game, to_move(game))
    assert message.to == [player.email]
    assert message.subject == f"Your move in Corn maze #{game.pk}"
    link = f"https://mazes.example/games/{game.pk}/"
    assert link in message.body and "3 days, 0:00:00 for this move" in message.body
    assert "A player who runs out of time loses." in message.body
    ((html, mimetype),) = message.alternatives  # type: ignore[attr-defined]
    assert mimetype == "text/html" and f'href="{link}"' in html
    unsubscribe = message.extra_headers["List-Unsubscribe"]
    assert unsubscribe.startswith("<https://mazes.example/unsubscribe/") and unsubscribe[-1] == ">"
    assert message.extra_headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    row.refresh_from_db()
    assert (row.status, row.to_email, row.attempts) == ("sent", player.email, 1)
    assert row.sent_at == START and row.subject == message.subject


@pytest.mark.django_db
def test_no_your_turn_mail_while_the_player_has_the_game_open() -> None:
    game = make_game(make_player(), make_player())
    (row,) = Outbox.objects.all()
    notifications.watching_mark(game_id=game.pk, user_id=row.user_id)
    assert notifications.outbox_send(outbox_id=row.pk) == "skipped"
    row.refresh_from_db()
    assert row.note == "the player had the game open" and not mail.outbox


@pytest.mark.django_db
def test_a_your_turn_mail_for_a_turn_already_played_is_not_sent() -> None:
    game = make_game(make_player(), make_player())
    (row,) = Outbox.objects.all()
    play_one(game)
    assert notifications.outbox_send(outbox_id=row.pk) == "skipped"
    row.refresh_from_db()
    assert row.note == "the seat has moved since"
    assert [m.to for m in mail.outbox] == []


@pytest.mark.django_db
def test_game_over_goes_to_both_players_with_the_result() -> None:
    game = make_game(make_player(), make_player())
    play_one(game)
    loser = to_move(game)
    with time_machine.travel(datetime.now(UTC) + timedelta(days=3, seconds=5), tick=False):
        assert sweeps.deadlines_sweep() == 1
    Outbox.objects.filter(kind="your_turn").update(status="sent")
    assert send_all() == ["sent", "sent"]
    by_address = {m.to[0]: m for m in mail.outbox}
    lost = by_address[player_at(game, loser).email]
    won = by_address[player_at(game, 1 - loser).email]
    assert lost.subject == f"Corn maze #{game.pk} is over: you lost"
    assert won.subject == f"Corn maze #{game.pk} is over: you won"
    assert "(you ran out of time)" in lost.body
    assert f"({player_at(game, loser).username} ran out of time)" in won.body


@pytest.mark.django_db
def test_an_aborted_game_says_so() -> None:
    game = make_game(make_player(), make_player())
    services.game_resign(game_id=game.pk, user=player_at(game, 0))
    Outbox.objects.filter(kind="your_turn").update(status="sent")
    assert send_all() == ["sent", "sent"]
    game.refresh_from_db()
    assert game.status == Game.Status.FINISHED  # a resignation is a result, not an abort
    with time_machine.travel(datetime.now(UTC) + timedelta(days=3, seconds=5), tick=False):
        other = make_game(make_player(), make_player())
    with time_machine.travel(datetime.now(UTC) + timedelta(days=6, seconds=10), tick=False):
        sweeps.deadlines_sweep()
        Outbox.objects.filter(kind="your_turn").update(status="sent")
        mail.outbox.clear()
        assert send_all() == ["sent", "sent"]
    other.refresh_from_db()
    assert other.status == Game.Status.ABORTED
    assert all(m.subject.endswith("is over: aborted") for m in mail.outbox)
    assert "There is no result." in mail.outbox[0].body


@pytest.mark.django_db
def test_switched_off_mails_are_not_made_nor_sent() -> None:
    player, other = make_player(), make_player()
    notifications.preferences_update(user=player, turn_mails="off", reminder=False, game_over=False)
    notifications.preferences_update(user=other, turn_mails="off", reminder=True, game_over=True)
    game = make_game(player, other)
    services.game_resign(game_id=game.pk, user=player)
    assert list(Outbox.objects.values_list("user_id", "kind")) == [(other.pk, "game_over")]
    # Switched off after the row was made: skipped when its turn comes.
    notifications.preferences_update(user=other, turn_mails="off", reminder=True, game_over=False)
    assert send_all() == ["skipped"]


@pytest.mark.django_db
def test_the_daily_digest_replaces_your_turn_mails_and_goes_out_once_a_day(
    django_capture_on_commit_callbacks, queued: Queued
) -> None:
    player = make_player("dora")
    notifications.preferences_update(
        user=player, turn_mails="digest", reminder=True, game_over=True
    )
    with time_machine.travel(START, tick=False):
        games = [make_game(player, make_player()) for _ in range(3)]
        for game in games:
            if to_move(game) == 1:
                play_one(game)
    assert not Outbox.objects.filter(user=player).exists()  # no per-move mail
    with (
        time_machine.travel(START + timedelta(hours=2), tick=False),
        django_capture_on_commit_callbacks(execute=True),
    ):
        assert notifications.digest_queue_all() == 1
        assert notifications.digest_queue_all() == 0  # the same day again
    (row,) = Outbox.objects.filter(user=player)
    assert queued.mails[-1] == row.pk
    with time_machine.travel(START + timedelta(hours=2), tick=False):
        assert notifications.outbox_send(outbox_id=row.pk) == "sent"
    (message,) = [m for m in mail.outbox if m.to == [player.email]]
    assert message.subject == "Your move in 3 games"
    for game in games:
        assert f"/games/{game.pk}/" in message.body
    assert "2 days, 22:00:00 left" in message.body
    assert message.extra_headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    with time_machine.travel(START + timedelta(days=1, hours=2), tick=False):
        assert notifications.digest_queue_all() == 1  # the next day


@pytest.mark.django_db
def test_a_failing_mail_server_is_retried_then_marked_failed(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    make_game(make_player(), make_player())
    (row,) = Outbox.objects.all()

    def refuse(self, messages):  # type: ignore[no-untyped-def]
        raise SMTPServerDisconnected("the server went away")

    monkeypatch.setattr(EmailBackend, "send_messages", refuse)
    with pytest.raises(SMTPServerDisconnected):
        notifications.outbox_send(outbox_id=row.pk, last_attempt=False)
    row.refresh_from_db()
    assert (row.status, row.attempts) == ("pending", 1)
    assert "the server went away" in row.note
    assert notifications.outbox_send(outbox_id=row.pk, last_attempt=True) == "failed"
    row.refresh_from_db()
    assert (row.status, row.attempts) == ("failed", 2)
    # The task retries these errors with backoff, at most a few times.
    task = tasks.mail_send
    assert SMTPServerDisconnected.__mro__[1] in task.autoretry_for or any(
        issubclass(SMTPServerDisconnected, e) for e in task.autoretry_for
    )
    assert task.retry_backoff and task.max_retries == 6 and task.acks_late


@pytest.mark.django_db
def test_the_admin_sends_a_stuck_mail_again(
    admin_client, queued: Queued, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    make_game(make_player(), make_player())
    (row,) = Outbox.objects.all()
    Outbox.objects.filter(pk=row.pk).update(status="failed", attempts=7, note="refused")
    page = admin_client.get(reverse("admin:games_outbox_changelist")).content.decode()
    assert f">{row.pk}<" in page or f"/{row.pk}/change/" in page  # the stuck row is listed
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("admin:games_outbox_changelist"),
            {"action": "resend", "_selected_action": [row.pk]},
        )
    assert response.status_code == 302
    row.refresh_from_db()
    assert (row.status, row.attempts, row.note) == ("pending", 0, "")
    assert queued.mails == [row.pk]
    assert notifications.outbox_send(outbox_id=row.pk) == "sent"


# --- the pages --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_unsubscribing_with_one_click_needs_no_sign_in_and_no_csrf_token() -> None:
    player = make_player()
    token = notifications.unsubscribe_token(user_id=player.pk, kind="your_turn")
    client = Client(enforce_csrf_checks=True)
    url = reverse("unsubscribe", args=[token])
    page = client.get(url)
    assert page.status_code == 200 and "Stop “your turn” mails" in page.content.decode()
    assert notifications.preferences_for(player).turn_mails == "immediate"  # GET changes nothing
    response = client.post(
        url, "List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 200 and "gets no more" in response.content.decode()
    assert EmailPreferences.objects.get(user=player).turn_mails == "off"
    # The other kinds each switch off their own mail.
    for kind, field, off in (("reminder", "reminder", False), ("game_over", "game_over", False)):
        token = notifications.unsubscribe_token(user_id=player.pk, kind=kind)
        assert client.post(reverse("unsubscribe", args=[token])).status_code == 200
        assert getattr(EmailPreferences.objects.get(user=player), field) is off


@pytest.mark.django_db
def test_a_forged_unsubscribe_link_is_refused() -> None:
    player = make_player()
    token = notifications.unsubscribe_token(user_id=player.pk, kind="your_turn")
    response = Client().post(reverse("unsubscribe", args=[token[:-2] + "xx"]))
    assert response.status_code == 400 and "not valid" in response.content.decode()
    assert not EmailPreferences.objects.exists()


@pytest.mark.django_db
def test_the_email_settings_page_changes_the_preferences(client) -> None:  # type: ignore[no-untyped-def]
    url = reverse("email_settings")
    assert client.get(url).status_code == 302  # sign in first
    player = make_player()
    client.force_login(player)
    page = client.get(url).content.decode()
    assert "Mails go to" in page and player.email in page
    response = client.post(url, {"turn_mails": "digest", "reminder": "on"})
    assert response.status_code == 302
    prefs = EmailPreferences.objects.get(user=player)
    assert (prefs.turn_mails, prefs.reminder, prefs.game_over) == ("digest", True, False)
    assert client.post(url, {"turn_mails": "sometimes"}).status_code == 400


@pytest.mark.django_db
def test_a_guest_sees_how_to_add_an_address(client) -> None:  # type: ignore[no-untyped-def]
    guest = guest_create()
    client.force_login(guest)
    page = client.get(reverse("email_settings")).content.decode()
    assert "Add an address" in page and reverse("account") in page
