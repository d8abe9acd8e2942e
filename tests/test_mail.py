"""Mails: who gets which, the outbox that sends each once, the message itself, preferences,
the digest, unsubscribing without signing in, and the admin's resend; a mail held while the
player has the game open, retries, and a broker that is down when a move commits."""

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

from games.accounts.guests import guest_create
from games.mail import digests, outbox, preferences, watching
from games.models import EmailPreferences, Game, Outbox, Profile
from games.play import core, sweeps
from tests.worker_fixtures import (
    Queued,
    broker_unreachable,
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
        outbox.outbox_send(outbox_id=pk)
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
        core.move_submit(
            game_id=game.pk, user=player_at(game, mover), number=0, move=legal_move(game)
        )
        assert Outbox.objects.count() == before + 1  # the other player's "your turn" ...
        raise RuntimeError("something later failed")
    assert Outbox.objects.count() == before  # ... gone with the move
    assert queued.calls == []
    # The same move committed queues exactly one mail.
    core.move_submit(game_id=game.pk, user=player_at(game, mover), number=0, move=legal_move(game))
    (row,) = Outbox.objects.filter(kind="your_turn", ply=1)
    assert queued.calls == [("games.tasks.mail_send", (row.pk,))]


@pytest.mark.django_db
def test_a_your_turn_mail_has_text_html_a_link_and_one_click_unsubscribe(settings) -> None:  # type: ignore[no-untyped-def]
    settings.SITE_URL = "https://mazes.example"
    with time_machine.travel(START, tick=False):
        game = make_game(make_player("ann"), make_player("bob"))
        (row,) = Outbox.objects.all()
        assert outbox.outbox_send(outbox_id=row.pk) == "sent"
        assert outbox.outbox_send(outbox_id=row.pk) is None  # a second task: nothing
    (message,) = mail.outbox
    player = player_at(game, to_move(game))
    assert message.to == [player.email]
    assert message.subject == f"Your move in Corn maze #{game.pk}"
    link = f"https://mazes.example/games/{game.pk}/"
    assert link in message.body and "3 days, 0:00:00 for this move" in message.body
    # The game page's words: automatic vacation comes first, once play has begun.
    assert (
        "A player who runs out of time loses. Once play has begun, a registered player with "
        "vacation days left goes on vacation instead" in " ".join(message.body.split())
    )
    ((html, mimetype),) = message.alternatives  # type: ignore[attr-defined]
    assert mimetype == "text/html" and f'href="{link}"' in html
    unsubscribe = message.extra_headers["List-Unsubscribe"]
    assert unsubscribe.startswith("<https://mazes.example/unsubscribe/") and unsubscribe[-1] == ">"
    assert message.extra_headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    row.refresh_from_db()
    assert (row.status, row.to_email, row.attempts) == ("sent", player.email, 1)
    assert row.sent_at == START and row.subject == message.subject


@pytest.mark.django_db
def test_a_mails_times_are_in_its_readers_own_time_zone() -> None:
    # Noon UTC is 21:00 in Tokyo (JST, UTC+9) and 07:00 in New York (EST in January, UTC-5).
    noon = datetime(2027, 1, 11, 12, tzinfo=UTC)
    with time_machine.travel(noon, tick=False):
        ann, bob = make_player("ann"), make_player("bob")
        for player, zone in ((ann, "Asia/Tokyo"), (bob, "America/New_York")):
            player.profile.time_zone = zone
            player.profile.save(update_fields=["time_zone"])
        game = make_game(ann, bob)
        (row,) = Outbox.objects.all()
        assert outbox.outbox_send(outbox_id=row.pk) == "sent"
    (message,) = mail.outbox
    ((html, _),) = message.alternatives  # type: ignore[attr-defined]
    # Whoever is to move (the seed says), their own zone.
    if player_at(game, to_move(game)) == ann:
        until = "until Thursday 14 January 2027, 21:00 JST"
    else:
        until = "until Thursday 14 January 2027, 07:00 EST"
    assert until in message.body and until in html


WATCHING = timedelta(seconds=watching.WATCHING_SECONDS)


@pytest.mark.django_db
def test_a_your_turn_mail_held_while_the_player_has_the_game_open_goes_out_when_they_leave(
    queued: Queued, django_capture_on_commit_callbacks
) -> None:
    with time_machine.travel(START, tick=False):
        game = make_game(make_player(), make_player())
        (row,) = Outbox.objects.all()
        watching.watching_mark(game_id=game.pk, user_id=row.user_id)  # the page polls
        assert outbox.outbox_send(outbox_id=row.pk) == "pending"
    row.refresh_from_db()
    assert (row.status, row.next_try_at, row.attempts) == ("pending", START + WATCHING, 0)
    assert row.note == "held while the player has the game open" and not mail.outbox
    queued.clear()
    with time_machine.travel(START + WATCHING - timedelta(seconds=1), tick=False):
        assert sweeps.mails_sweep() == 0
        watching.watching_mark(game_id=game.pk, user_id=row.user_id)  # still there
    # The sweep tries again when the window is over: the player is still there, so it waits.
    with (
        time_machine.travel(START + WATCHING, tick=False),
        django_capture_on_commit_callbacks(execute=True),
    ):
        assert sweeps.mails_sweep() == 1
    assert queued.mails == [row.pk]
    with time_machine.travel(START + WATCHING, tick=False):
        assert outbox.outbox_send(outbox_id=row.pk) == "pending"
    row.refresh_from_db()
    left = START + 2 * WATCHING - timedelta(seconds=1)  # a window after their last poll
    assert row.next_try_at == left
    # They left without moving, and it is still their turn: the mail goes out, once.
    queued.clear()
    with time_machine.travel(left, tick=False), django_capture_on_commit_callbacks(execute=True):
        assert sweeps.mails_sweep() == 1
    assert queued.mails == [row.pk]
    with time_machine.travel(left, tick=False):
        assert outbox.outbox_send(outbox_id=row.pk) == "sent"
        assert outbox.outbox_send(outbox_id=row.pk) is None
        assert sweeps.mails_sweep() == 0
    (message,) = mail.outbox
    assert message.to == [player_at(game, to_move(game)).email]
    assert message.subject == f"Your move in Corn maze #{game.pk}"
    row.refresh_from_db()
    assert (row.status, row.attempts, row.note, row.sent_at) == ("sent", 1, "", left)


@pytest.mark.django_db
def test_a_held_your_turn_mail_is_not_sent_once_the_player_has_moved() -> None:
    with time_machine.travel(START, tick=False):
        game = make_game(make_player(), make_player())
        first = to_move(game)
        (held,) = Outbox.objects.all()
        watching.watching_mark(game_id=game.pk, user_id=held.user_id)
        assert outbox.outbox_send(outbox_id=held.pk) == "pending"
        # The player moves while the mail waits; the other moves too: it is their turn again.
        play_one(game)
        play_one(game)
    assert to_move(game) == first
    with time_machine.travel(START + WATCHING, tick=False):
        # The held mail was for the turn they played: not sent. The new turn has its own.
        assert outbox.outbox_send(outbox_id=held.pk) == "skipped"
        held.refresh_from_db()
        assert held.note == "the seat has moved since"
        send_all()
    mover = player_at(game, first)
    assert [m.subject for m in mail.outbox if m.to == [mover.email]] == [
        f"Your move in Corn maze #{game.pk}"
    ]
    assert Outbox.objects.get(user=mover, status="sent").ply == 2


@pytest.mark.django_db
def test_a_your_turn_mail_for_a_turn_already_played_is_not_sent() -> None:
    game = make_game(make_player(), make_player())
    (row,) = Outbox.objects.all()
    play_one(game)
    assert outbox.outbox_send(outbox_id=row.pk) == "skipped"
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
def test_a_player_dropped_by_their_clock_is_told_at_once_and_again_at_the_end() -> None:
    game = make_game(make_player(), make_player(), make_player())
    play_one(game)
    late = to_move(game)
    dropped = player_at(game, late)
    with time_machine.travel(datetime.now(UTC) + timedelta(days=3, seconds=5), tick=False):
        assert sweeps.deadlines_sweep() == 1
    game.refresh_from_db()
    assert game.status == Game.Status.ACTIVE  # the two others play on
    Outbox.objects.filter(kind="your_turn").update(status="sent")
    assert send_all() == ["sent"]
    (message,) = mail.outbox
    assert message.to == [dropped.email]
    assert message.subject == f"You ran out of time in Corn maze #{game.pk}"
    assert "is dropped from the game" in message.body
    assert "The others play on" in message.body
    # The game over mail still comes at the end, to every player.
    (row,) = Outbox.objects.filter(kind=Outbox.Kind.DROPPED)
    assert row.user_id == dropped.pk and row.seat == late
    for seat in game.seats.exclude(index=late):
        assert seat.user is not None
        core.game_resign(game_id=game.pk, user=seat.user)
        game.refresh_from_db()
        if game.is_over:
            break
    assert game.status == Game.Status.FINISHED
    over = Outbox.objects.filter(kind=Outbox.Kind.GAME_OVER)
    assert sorted(over.values_list("user_id", flat=True)) == sorted(
        s.user_id for s in game.seats.all()
    )


@pytest.mark.django_db
def test_an_aborted_game_says_so() -> None:
    game = make_game(make_player(), make_player())
    core.game_resign(game_id=game.pk, user=player_at(game, 0))
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
    assert "Aborted: nobody moved before the first deadline. No result." in mail.outbox[0].body


@pytest.mark.django_db
def test_switched_off_mails_are_not_made_nor_sent() -> None:
    player, other = make_player(), make_player()
    preferences.preferences_update(user=player, turn_mails="off", reminder=False, game_over=False)
    preferences.preferences_update(user=other, turn_mails="off", reminder=True, game_over=True)
    game = make_game(player, other)
    core.game_resign(game_id=game.pk, user=player)
    assert list(Outbox.objects.values_list("user_id", "kind")) == [(other.pk, "game_over")]
    # Switched off after the row was made: skipped when its turn comes.
    preferences.preferences_update(user=other, turn_mails="off", reminder=True, game_over=False)
    assert send_all() == ["skipped"]


@pytest.mark.django_db
def test_the_daily_digest_replaces_your_turn_mails_and_goes_out_once_a_day(
    django_capture_on_commit_callbacks, queued: Queued
) -> None:
    player = make_player("dora")
    preferences.preferences_update(user=player, turn_mails="digest", reminder=True, game_over=True)
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
        assert digests.digest_queue_all() == 1
        assert digests.digest_queue_all() == 0  # the same day again
    (row,) = Outbox.objects.filter(user=player)
    assert queued.mails[-1] == row.pk
    with time_machine.travel(START + timedelta(hours=2), tick=False):
        assert outbox.outbox_send(outbox_id=row.pk) == "sent"
    (message,) = [m for m in mail.outbox if m.to == [player.email]]
    assert message.subject == "Your move in 3 games"
    for game in games:
        assert f"/games/{game.pk}/" in message.body
    assert "2 days, 22:00:00 left" in message.body
    assert message.extra_headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    with time_machine.travel(START + timedelta(days=1, hours=2), tick=False):
        assert digests.digest_queue_all() == 1  # the next day


@pytest.mark.django_db
def test_a_failing_mail_server_is_tried_again_after_a_backoff_then_marked_failed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with time_machine.travel(START, tick=False):
        make_game(make_player(), make_player())
    (row,) = Outbox.objects.all()

    def refuse(self, messages):  # type: ignore[no-untyped-def]
        raise SMTPServerDisconnected("the server went away")

    monkeypatch.setattr(EmailBackend, "send_messages", refuse)
    now = START
    waits = []
    for attempt in range(1, outbox.MAX_ATTEMPTS):
        with time_machine.travel(now, tick=False):
            assert outbox.outbox_send(outbox_id=row.pk) == "pending"
        row.refresh_from_db()
        assert (row.status, row.attempts) == ("pending", attempt)
        assert "the server went away" in row.note
        waits.append(row.next_try_at - now)
        # The sweep leaves it alone until its backoff is over.
        with time_machine.travel(row.next_try_at - timedelta(seconds=1), tick=False):
            assert sweeps.mails_sweep() == 0
        now = row.next_try_at
        with time_machine.travel(now, tick=False):
            assert sweeps.mails_sweep() == 1
    assert waits == [timedelta(seconds=s) for s in (30, 60, 120, 240, 480)]
    with time_machine.travel(now, tick=False):
        assert outbox.outbox_send(outbox_id=row.pk) == "failed"
    row.refresh_from_db()
    assert (row.status, row.attempts) == ("failed", outbox.MAX_ATTEMPTS)
    with time_machine.travel(now + timedelta(days=1), tick=False):
        assert sweeps.mails_sweep() == 0  # failed: only the admin sends it again


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
    assert outbox.outbox_send(outbox_id=row.pk) == "sent"


@pytest.mark.django_db(transaction=True)
def test_with_the_broker_down_a_move_answers_and_its_mail_waits_for_the_sweep(
    queued: Queued,
) -> None:
    game, other = (make_game(make_player(), make_player()) for _ in range(2))
    Outbox.objects.update(status="sent")  # their first mails, before the broker went down
    mover = to_move(game)
    client = Client(raise_request_exception=False)
    client.force_login(player_at(game, mover))
    first, second = ("abcdefgh"[col] for col in legal_move(game)["shifts"])
    queued.clear()
    hooks_run: list[str] = []
    with broker_unreachable():
        response = client.post(
            reverse("game_move", args=[game.pk]), {"ply": "0", "first": first, "second": second}
        )
        assert response.status_code == 302
        # The hooks of a transaction after its mails' hook still run.
        with transaction.atomic():
            core.game_resign(game_id=other.pk, user=player_at(other, 0))
            transaction.on_commit(lambda: hooks_run.append("after the mails"))
        assert hooks_run == ["after the mails"]
    game.refresh_from_db()
    assert game.ply == 1
    row = Outbox.objects.get(game=game, kind="your_turn", ply=1)
    assert (row.status, row.attempts) == ("pending", 0)
    over = Outbox.objects.filter(game=other, kind="game_over", status="pending")
    assert over.count() == 2
    assert queued.calls == []  # nothing reached the broker
    # The broker is back. Within a minute the sweep finds each mail, and each goes once.
    assert row.next_try_at - row.created_at <= timedelta(minutes=1)
    with time_machine.travel(row.next_try_at - timedelta(seconds=1), tick=False):
        assert sweeps.mails_sweep() == 0  # its task may still be on its way
    with time_machine.travel(row.next_try_at, tick=False):
        assert sweeps.mails_sweep() == 1
    assert queued.mails == [row.pk]
    assert outbox.outbox_send(outbox_id=row.pk) == "sent"
    assert outbox.outbox_send(outbox_id=row.pk) is None
    assert [m.to for m in mail.outbox] == [[player_at(game, 1 - mover).email]]
    queued.clear()
    with time_machine.travel(max(r.next_try_at for r in over), tick=False):
        assert sweeps.mails_sweep() == 2
    assert sorted(queued.mails) == sorted(r.pk for r in over)


# --- the pages --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_unsubscribing_with_one_click_needs_no_sign_in_and_no_csrf_token() -> None:
    player = make_player()
    token = preferences.unsubscribe_token(user_id=player.pk, kind="your_turn")
    client = Client(enforce_csrf_checks=True)
    url = reverse("unsubscribe", args=[token])
    page = client.get(url)
    assert page.status_code == 200 and "Stop “your turn” mails" in page.content.decode()
    assert preferences.preferences_for(player).turn_mails == "immediate"  # GET changes nothing
    response = client.post(
        url, "List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded"
    )
    name = f"<strong>{player.username}</strong>"
    done = f"Done: we will not send “your turn” mails to {name} any more."
    assert response.status_code == 200 and done in response.content.decode()
    assert EmailPreferences.objects.get(user=player).turn_mails == "off"
    # The other kinds each switch off their own mail.
    for kind, field, off in (("reminder", "reminder", False), ("game_over", "game_over", False)):
        token = preferences.unsubscribe_token(user_id=player.pk, kind=kind)
        assert client.post(reverse("unsubscribe", args=[token])).status_code == 200
        assert getattr(EmailPreferences.objects.get(user=player), field) is off


@pytest.mark.django_db
def test_an_unsubscribe_link_opened_again_says_it_is_done_already_and_asks_nothing() -> None:
    player = make_player()
    client = Client()
    name = f"<strong>{player.username}</strong>"
    token = preferences.unsubscribe_token(user_id=player.pk, kind="your_turn")
    url = reverse("unsubscribe", args=[token])
    # In the daily digest instead, a "your turn" link still stops something: it asks.
    EmailPreferences.objects.create(user=player, turn_mails="digest")
    assert 'id="unsubscribe"' in client.get(url).content.decode()
    client.post(url)
    again = client.get(url).content.decode()
    assert f"You are unsubscribed already: we do not send “your turn” mails to {name}." in again
    assert 'id="unsubscribe"' not in again and "Stop “your turn” mails" not in again
    assert EmailPreferences.objects.get(user=player).turn_mails == "off"
    # A reminders link is not done by the "your turn" one: it asks.
    token = preferences.unsubscribe_token(user_id=player.pk, kind="reminder")
    assert 'id="unsubscribe"' in client.get(reverse("unsubscribe", args=[token])).content.decode()


@pytest.mark.django_db
def test_a_forged_unsubscribe_link_is_refused() -> None:
    player = make_player()
    token = preferences.unsubscribe_token(user_id=player.pk, kind="your_turn")
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
    for bad, sentence in (
        ({"turn_mails": "sometimes"}, "Select a valid choice"),
        ({}, "This field is required"),
    ):
        refused = client.post(url, bad)
        assert refused.status_code == 400 and sentence in refused.content.decode()
    assert EmailPreferences.objects.get(user=player).turn_mails == "digest"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("zone", "day", "said"),
    [
        ("UTC", datetime(2026, 1, 15, tzinfo=UTC), "at 07:00 UTC,"),
        ("Europe/Paris", datetime(2026, 1, 15, tzinfo=UTC), "at 08:00 your time (Europe/Paris;"),
        ("Europe/Paris", datetime(2026, 7, 15, tzinfo=UTC), "at 09:00 your time (Europe/Paris;"),
        ("America/New_York", datetime(2026, 1, 15, tzinfo=UTC), "at 02:00 your time"),
    ],
)
def test_the_digest_hour_is_said_in_the_players_own_time(  # type: ignore[no-untyped-def]
    client, settings, zone: str, day: datetime, said: str
) -> None:
    settings.DIGEST_HOUR_UTC = 7
    player = make_player()
    Profile.objects.filter(user=player).update(time_zone=zone)
    client.force_login(player)
    with time_machine.travel(day, tick=False):
        page = client.get(reverse("email_settings")).content.decode()
    assert f"The digest goes out once a day, {said}" in page


@pytest.mark.django_db
def test_a_guest_sees_how_to_add_an_address(client) -> None:  # type: ignore[no-untyped-def]
    guest = guest_create()
    client.force_login(guest)
    page = client.get(reverse("email_settings")).content.decode()
    assert "Add an address" in page and reverse("account") in page
