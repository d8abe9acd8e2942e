"""The chat of a game (games/chat, the game page, games/mail/chatnews.py): players talk; the
spectators' channel is never shown to a player before the game is over (page, partials, poll,
record, mails); after the end everyone reads both. Escaping, the length limit, the rate limit,
muting, reporting and the admin's list of reported messages; mails that tell a player who is
away of the messages they missed, once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.contrib.auth.models import User
from django.core import mail
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from games.accounts.guests import guest_create
from games.chat import service as chat
from games.mail import chatnews, digests, outbox, preferences
from games.models import ChatMessage, ChatMute, ChatReport, Game, Outbox
from games.play import core
from tests.test_query_counts import KEPT_PAGE
from tests.worker_fixtures import make_game, make_player, play_one, player_at, to_move

HTMX = {"HTTP_HX_REQUEST": "true"}
# Ahead of the real clock (a watching mark of the page's poll is taken at the real time), at
# 09:00, so that the hours a test travels stay in one day.
START = (datetime.now(UTC) + timedelta(days=2)).replace(hour=9, minute=0, second=0, microsecond=0)
SECRET = "the crate is at c4, psst"

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("queued")]


def client_for(user: Any) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def say(user: Any, game: Game, text: str, *, htmx: bool = True) -> Any:
    extra = HTMX if htmx else {}
    return client_for(user).post(reverse("game_chat_post", args=[game.pk]), {"text": text}, **extra)


def chat_of(game: Game) -> list[tuple[str, str, str]]:
    return list(
        ChatMessage.objects.filter(game=game)
        .order_by("id")
        .values_list("author__username", "channel", "text")
    )


@pytest.fixture
def table() -> dict[str, Any]:
    """Two players with verified addresses in a running Corn maze, and a spectator."""
    with time_machine.travel(START, tick=False):
        ann, bob = make_player("ann"), make_player("bob")
        game = make_game(ann, bob)
    return {"game": game, "ann": ann, "bob": bob, "eve": make_player("zed_watcher")}


def every_view_of(game: Game, user: Any) -> dict[str, str]:
    """Everything of the game a viewer can fetch: the page, the game's partial, the chat's
    partial (its poll from the start), record.json."""
    client = client_for(user)
    return {
        "page": client.get(reverse("game", args=[game.pk])).content.decode(),
        "partial": client.get(reverse("game", args=[game.pk]), **HTMX).content.decode(),
        "chat": client.get(
            reverse("game_chat", args=[game.pk]), {"after": "0", "over": "0", "player": "1"}, **HTMX
        ).content.decode(),
        "record": client.get(reverse("game_record", args=[game.pk])).content.decode(),
    }


# --- talking -----------------------------------------------------------------------------------


def test_players_talk_and_everyone_reads_the_players_channel(table) -> None:
    game, ann, bob, eve = table["game"], table["ann"], table["bob"], table["eve"]
    response = say(ann, game, "Good luck, Bob!")
    assert response.status_code == 200
    assert "Good luck, Bob!" in response.content.decode()  # the chat, at once
    assert chat_of(game) == [("ann", "players", "Good luck, Bob!")]
    for viewer in (bob, eve, None):
        page = client_for(viewer).get(reverse("game", args=[game.pk])).content.decode()
        assert "Good luck, Bob!" in page
    # Without JavaScript: a plain form post, and back to the page's chat.
    response = say(bob, game, "Thanks, you too.", htmx=False)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("game", args=[game.pk]) + "?chat=")
    assert response["Location"].endswith("#chat")
    assert chat_of(game)[-1] == ("bob", "players", "Thanks, you too.")


def test_a_message_is_plain_text_and_escaped(table) -> None:
    game = table["game"]
    say(table["ann"], game, '<script>alert("x")</script>\r\nline two\x07')
    assert chat_of(game)[0][2] == '<script>alert("x")</script>\nline two'
    page = client_for(table["bob"]).get(reverse("game", args=[game.pk])).content.decode()
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;<br>line two" in page


def test_a_spectators_message_never_reaches_a_player_before_the_end(table) -> None:
    game, ann, bob, eve = table["game"], table["ann"], table["bob"], table["eve"]
    say(ann, game, "hello")
    before = {
        "page": client_for(ann).get(reverse("game", args=[game.pk])).content.decode(),
    }
    last = ChatMessage.objects.get().pk
    assert say(eve, game, SECRET).status_code == 200
    assert chat_of(game)[-1] == ("zed_watcher", "spectators", SECRET)
    # The spectators read it (and so does anyone not playing).
    for viewer in (eve, make_player(), None):
        page = client_for(viewer).get(reverse("game", args=[game.pk])).content.decode()
        assert SECRET in page
    for player in (ann, bob):
        for where, body in every_view_of(game, player).items():
            assert SECRET not in body, where
            assert eve.username not in body, where
        # Nor does its poll say that something came: nothing new for a player.
        poll = client_for(player).get(
            reverse("game_chat", args=[game.pk]),
            {"after": str(last), "over": "0", "player": "1"},
            **HTMX,
        )
        assert poll.status_code == 204
    assert before["page"].count("hello") == every_view_of(game, ann)["page"].count("hello")
    # Nor a mail: the "your turn" mail of the player to move, and the chat mails.
    with time_machine.travel(START + timedelta(hours=1), tick=False):
        play_one(game)
    with time_machine.travel(START + timedelta(days=1), tick=False):
        for pk in Outbox.objects.filter(status="pending").values_list("pk", flat=True):
            outbox.outbox_send(outbox_id=pk)
    assert mail.outbox
    for message in mail.outbox:
        assert SECRET not in message.body
        assert all(SECRET not in str(part[0]) for part in message.alternatives)
    # A player cannot report or mute what they cannot read.
    spectator_message = ChatMessage.objects.get(channel="spectators").pk
    for action in ("game_chat_report", "game_chat_mute"):
        response = client_for(ann).post(
            reverse(action, args=[game.pk]), {"message": str(spectator_message)}, **HTMX
        )
        assert response.status_code == 409
        assert "That message is not in this chat." in response.content.decode()
        assert SECRET not in response.content.decode()
    assert not ChatReport.objects.exists() and not ChatMute.objects.exists()


def test_after_the_end_everyone_reads_both_channels(table) -> None:
    game, ann, bob, eve = table["game"], table["ann"], table["bob"], table["eve"]
    say(eve, game, SECRET)
    last = ChatMessage.objects.get().pk
    assert SECRET not in client_for(ann).get(reverse("game", args=[game.pk])).content.decode()
    core.game_resign(game_id=game.pk, user=bob)
    # The poll of a player's chat from before the end brings the spectators' channel.
    poll = client_for(ann).get(
        reverse("game_chat", args=[game.pk]),
        {"after": str(last), "over": "0", "player": "1"},
        **HTMX,
    )
    assert poll.status_code == 200
    assert SECRET in poll.content.decode()
    for viewer in (ann, bob, eve, None):
        assert SECRET in client_for(viewer).get(reverse("game", args=[game.pk])).content.decode()
    # Players still write in theirs, spectators in theirs.
    say(ann, game, "gg")
    say(eve, game, "well played")
    assert chat_of(game)[-2:] == [
        ("ann", "players", "gg"),
        ("zed_watcher", "spectators", "well played"),
    ]


def test_the_record_holds_no_chat(table) -> None:
    game = table["game"]
    say(table["eve"], game, SECRET)
    say(table["ann"], game, "players' words")
    core.game_resign(game_id=game.pk, user=table["bob"])
    body = client_for(None).get(reverse("game_record", args=[game.pk])).content.decode()
    assert SECRET not in body and "players' words" not in body


def test_the_poll_answers_204_until_something_new_comes(table) -> None:
    game, ann, bob = table["game"], table["ann"], table["bob"]
    say(ann, game, "one")
    last = ChatMessage.objects.get().pk
    url = reverse("game_chat", args=[game.pk])
    client = client_for(bob)
    client.get(reverse("game", args=[game.pk]))  # the session, as a page
    with CaptureQueriesContext(connection) as queries:
        poll = client.get(url, {"after": str(last), "over": "0", "player": "1"}, **HTMX)
    assert poll.status_code == 204
    assert (
        len(queries) == 1
    )  # the chat's one (the session from the cache; the request log reads no user)
    say(ann, game, "two")
    poll = client.get(url, {"after": str(last), "over": "0", "player": "1"}, **HTMX)
    assert poll.status_code == 200 and "two" in poll.content.decode()
    # Without htmx the chat is the game page's.
    assert client.get(url).status_code == 302
    assert client.get(reverse("game_chat", args=[999999]), **HTMX).status_code == 404


def test_guests_chat_and_anonymous_viewers_only_read(make_cornmaze) -> None:
    guest, other = guest_create(), guest_create()
    game = core.game_create(
        kind="cornmaze",
        creator=guest,
        options={"size": 8},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
    )
    core.game_join(game_id=game.pk, user=other)
    assert say(guest, game, "hi from a guest").status_code == 200
    assert chat_of(game) == [(guest.username, "players", "hi from a guest")]
    anonymous = Client()
    page = anonymous.get(reverse("game", args=[game.pk])).content.decode()
    assert (
        "hi from a guest" in page and 'id="chat-sign-in"' in page and 'id="chat-text"' not in page
    )
    response = anonymous.post(reverse("game_chat_post", args=[game.pk]), {"text": "anon"})
    assert response.status_code == 409
    assert "Sign in, or join a game as a guest, to chat." in response.content.decode()
    assert len(chat_of(game)) == 1


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        ("", "Write a message first."),
        ("   \n\t ", "Write a message first."),
        ("x" * 501, "A message can be at most 500 characters; yours has 501."),
    ],
)
def test_an_empty_or_too_long_message_is_refused_and_kept_in_the_box(table, text, sentence) -> None:
    game = table["game"]
    for htmx in (True, False):
        response = say(table["ann"], game, text, htmx=htmx)
        assert response.status_code == 409
        body = response.content.decode()
        assert sentence in body
        if len(text) > 100:
            assert text in body  # what they typed, to shorten
    assert say(table["ann"], game, "x" * 500).status_code == 200  # the limit itself is fine
    assert len(chat_of(game)) == 1


def test_a_missing_game_is_refused(table) -> None:
    for htmx in (True, False):
        response = client_for(table["ann"]).post(
            reverse("game_chat_post", args=[999999]), {"text": "hello"}, **(HTMX if htmx else {})
        )
        assert response.status_code in (404, 409)
    assert not ChatMessage.objects.exists()


def test_chat_is_rate_limited(table) -> None:
    game = table["game"]
    client = client_for(table["ann"])
    url = reverse("game_chat_post", args=[game.pk])
    with time_machine.travel(START, tick=False):
        for n in range(10):
            assert client.post(url, {"text": f"m{n}"}, **HTMX).status_code == 200
        response = client.post(url, {"text": "one too many"}, **HTMX)
    assert response.status_code == 429
    assert "You have sent many chat messages in a short time." in response.content.decode()
    assert len(chat_of(game)) == 10


# --- muting and reporting ----------------------------------------------------------------------


def test_a_player_mutes_a_partner_for_themselves_only_and_unmutes(table) -> None:
    game, ann, bob, eve = table["game"], table["ann"], table["bob"], table["eve"]
    say(bob, game, "annoying words")
    message = ChatMessage.objects.get()
    response = client_for(ann).post(
        reverse("game_chat_mute", args=[game.pk]), {"message": str(message.pk)}, **HTMX
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert "You will not see messages from bob any more" in body
    assert "annoying words" not in body and "You muted bob." in body
    assert list(ChatMute.objects.values_list("user__username", "muted__username")) == [
        ("ann", "bob")
    ]
    assert (
        "annoying words"
        not in client_for(ann).get(reverse("game", args=[game.pk])).content.decode()
    )
    assert "annoying words" in client_for(eve).get(reverse("game", args=[game.pk])).content.decode()
    # Twice: a sentence, nothing changes. Oneself: refused.
    again = client_for(ann).post(
        reverse("game_chat_mute", args=[game.pk]), {"message": str(message.pk)}, **HTMX
    )
    assert again.status_code == 409 and "You have muted bob already." in again.content.decode()
    say(ann, game, "mine")
    mine = ChatMessage.objects.get(text="mine")
    self_mute = client_for(ann).post(
        reverse("game_chat_mute", args=[game.pk]), {"message": str(mine.pk)}, **HTMX
    )
    assert self_mute.status_code == 409
    assert "You cannot mute yourself." in self_mute.content.decode()
    assert ChatMute.objects.count() == 1
    # Unmuted, without JavaScript.
    response = client_for(ann).post(
        reverse("game_chat_unmute", args=[game.pk]), {"person": str(bob.pk)}
    )
    assert response.status_code == 302
    assert not ChatMute.objects.exists()
    assert "annoying words" in client_for(ann).get(reverse("game", args=[game.pk])).content.decode()
    again = client_for(ann).post(
        reverse("game_chat_unmute", args=[game.pk]), {"person": str(bob.pk)}, **HTMX
    )
    assert again.status_code == 409 and "You have not muted that person." in again.content.decode()


def test_a_channel_of_muted_messages_only_says_they_are_hidden_not_that_there_are_none(
    table,
) -> None:
    game, ann, bob = table["game"], table["ann"], table["bob"]
    say(bob, game, "annoying words")
    say(bob, game, "more of them")
    ChatMute.objects.create(user=ann, muted=bob, created_at=START)
    views = every_view_of(game, ann)
    for page in (views["page"], views["chat"]):
        assert (
            '<p id="chat-players-empty">No messages to show: 2 from people you muted are'
            " hidden.</p>"
        ) in page
        assert "No messages yet." not in page
        assert "2 messages from people you muted are hidden." in page
    say(ann, game, "hello?")
    page = client_for(ann).get(reverse("game", args=[game.pk])).content.decode()
    assert "hello?" in page and "chat-players-empty" not in page
    assert "2 messages from people you muted are hidden." in page


def test_a_report_is_kept_once_and_never_of_ones_own_message(table) -> None:
    game, ann, bob = table["game"], table["ann"], table["bob"]
    say(bob, game, "rude words")
    message = ChatMessage.objects.get()
    url = reverse("game_chat_report", args=[game.pk])
    response = client_for(ann).post(url, {"message": str(message.pk)}, **HTMX)
    assert response.status_code == 200
    assert "the message is reported" in response.content.decode()
    again = client_for(ann).post(url, {"message": str(message.pk)}, **HTMX)
    assert again.status_code == 409
    assert "You have reported this message already." in again.content.decode()
    own = client_for(bob).post(url, {"message": str(message.pk)}, **HTMX)
    assert own.status_code == 409
    assert "You cannot report your own message." in own.content.decode()
    for bad in ("", "x", "²", "999999999"):
        response = client_for(ann).post(url, {"message": bad}, **HTMX)
        assert response.status_code == 409
        assert "That message is not in this chat." in response.content.decode()
    assert list(ChatReport.objects.values_list("reporter__username", "message__text")) == [
        ("ann", "rude words")
    ]


def test_the_admin_lists_reported_messages(table) -> None:
    game, ann, bob = table["game"], table["ann"], table["bob"]
    say(bob, game, "rude words")
    say(bob, game, "kind words")
    chat.chat_report(
        game_id=game.pk, user=ann, message_id=ChatMessage.objects.get(text="rude words").pk
    )
    staff = User.objects.create_superuser("staff", "staff@example.com", "a-long-passphrase")
    client = client_for(staff)
    listing = client.get(reverse("admin:games_chatmessage_changelist"), {"reported": "yes"})
    assert listing.status_code == 200
    body = listing.content.decode()
    assert "rude words" in body and "kind words" not in body
    everything = client.get(reverse("admin:games_chatmessage_changelist")).content.decode()
    assert "kind words" in everything
    assert client.get(reverse("admin:games_chatreport_changelist")).status_code == 200


# --- mails -------------------------------------------------------------------------------------


def pending_chat_mails() -> list[Outbox]:
    return list(Outbox.objects.filter(kind="chat", status="pending"))


def test_a_player_who_is_away_gets_one_chat_mail_a_day_with_what_they_missed(table) -> None:
    game, ann, bob, eve = table["game"], table["ann"], table["bob"], table["eve"]
    with time_machine.travel(START + timedelta(hours=1), tick=False):
        say(ann, game, "Are you there, Bob?")
        say(ann, game, "Your move, I think.")
        say(eve, game, SECRET)  # spectators are never mailed
    (row,) = pending_chat_mails()
    assert row.user == bob
    # Not before its delay: the sweep finds it due 10 minutes later, and it goes out once.
    assert not outbox.due_mails(START + timedelta(hours=1, minutes=5)).filter(pk=row.pk).exists()
    assert outbox.due_mails(START + timedelta(hours=1, minutes=11)).filter(pk=row.pk).exists()
    with time_machine.travel(START + timedelta(hours=1, minutes=11), tick=False):
        assert outbox.outbox_send(outbox_id=row.pk) == "sent"
        assert outbox.outbox_send(outbox_id=row.pk) is None
    (message,) = mail.outbox
    assert message.to == [bob.email]
    assert message.subject == f"New chat messages in Corn maze #{game.pk}"
    assert "Are you there, Bob?" in message.body and "Your move, I think." in message.body
    assert SECRET not in message.body
    html = str(message.alternatives[0][0])
    assert "Are you there, Bob?" in html and SECRET not in html
    assert "/unsubscribe/" in message.extra_headers["List-Unsubscribe"]
    # The same day: no second chat mail, however much is written.
    with time_machine.travel(START + timedelta(hours=3), tick=False):
        say(ann, game, "Hello again")
    assert pending_chat_mails() == []
    # The next day there may be one, with only what it has not told yet.
    with time_machine.travel(START + timedelta(days=1), tick=False):
        say(ann, game, "A new day")
    (row,) = pending_chat_mails()
    with time_machine.travel(START + timedelta(days=1, minutes=11), tick=False):
        assert outbox.outbox_send(outbox_id=row.pk) == "sent"
    body = mail.outbox[-1].body
    assert "Hello again" in body and "A new day" in body and "Are you there" not in body


def test_no_chat_mail_for_messages_read_on_the_page(table) -> None:
    game, ann, bob = table["game"], table["ann"], table["bob"]
    with time_machine.travel(START + timedelta(hours=1), tick=False):
        say(ann, game, "Bob will read this on the page")
        client_for(bob).get(reverse("game", args=[game.pk]))
    (row,) = pending_chat_mails()
    with time_machine.travel(START + timedelta(hours=1, minutes=11), tick=False):
        assert outbox.outbox_send(outbox_id=row.pk) == "skipped"
    assert not mail.outbox
    # A skipped one does not use up the day.
    with time_machine.travel(START + timedelta(hours=2), tick=False):
        say(ann, game, "but not this")
    assert len(pending_chat_mails()) == 1


def test_a_muted_partner_is_not_mailed_and_chat_mails_can_be_switched_off(table) -> None:
    game, ann, bob = table["game"], table["ann"], table["bob"]
    ChatMute.objects.create(user=bob, muted=ann, created_at=START)
    with time_machine.travel(START + timedelta(hours=1), tick=False):
        say(ann, game, "muted words")
    (row,) = pending_chat_mails()
    with time_machine.travel(START + timedelta(hours=1, minutes=11), tick=False):
        assert outbox.outbox_send(outbox_id=row.pk) == "skipped"
    preferences.preferences_update(
        user=ann, turn_mails="immediate", reminder=True, game_over=True, chat=False
    )
    with time_machine.travel(START + timedelta(hours=2), tick=False):
        say(bob, game, "Ann does not want chat mails")
    assert pending_chat_mails() == []


def test_the_your_turn_mail_lists_unread_messages_and_then_no_chat_mail_does(table) -> None:
    game, ann, bob = table["game"], table["ann"], table["bob"]
    mover = to_move(game)
    waiting = player_at(game, 1 - mover)
    talker = player_at(game, mover)
    with time_machine.travel(START + timedelta(hours=1), tick=False):
        say(talker, game, "I am about to move")
        say(table["eve"], game, SECRET)
        Outbox.objects.filter(kind="your_turn").delete()
        play_one(game)  # the waiting player's turn: their mail
    (turn,) = Outbox.objects.filter(kind="your_turn", user=waiting)
    with time_machine.travel(START + timedelta(hours=1, minutes=1), tick=False):
        assert outbox.outbox_send(outbox_id=turn.pk) == "sent"
    message = mail.outbox[-1]
    assert "Chat messages you have not read yet" in message.body
    assert "I am about to move" in message.body and SECRET not in message.body
    (row,) = Outbox.objects.filter(kind="chat", user=waiting)
    with time_machine.travel(START + timedelta(hours=1, minutes=11), tick=False):
        assert outbox.outbox_send(outbox_id=row.pk) == "skipped"  # told already
    assert {ann, bob} == {waiting, talker}


def test_the_digest_lists_unread_messages(table) -> None:
    game, ann, bob = table["game"], table["ann"], table["bob"]
    mover = player_at(game, to_move(game))
    other = ann if mover == bob else bob
    preferences.preferences_update(user=mover, turn_mails="digest", reminder=True, game_over=True)
    with time_machine.travel(START + timedelta(hours=1), tick=False):
        say(other, game, "Take your time")
    with time_machine.travel(START + timedelta(hours=2), tick=False):
        assert digests.digest_queue_all() == 1
        (row,) = Outbox.objects.filter(kind="digest")
        assert outbox.outbox_send(outbox_id=row.pk) == "sent"
    assert "Take your time" in mail.outbox[-1].body
    assert chatnews.unread(user_id=mover.pk, game_ids=[game.pk]) == {}


# --- what a page costs -------------------------------------------------------------------------


def test_the_game_page_costs_the_same_with_a_long_chat(table) -> None:
    game, ann, bob, eve = table["game"], table["ann"], table["bob"], table["eve"]
    say(bob, game, "first")
    ChatMute.objects.create(user=ann, muted=eve, created_at=START)

    def page_queries(user: Any) -> int:
        client = client_for(user)
        client.get(reverse("game", args=[game.pk]))
        with CaptureQueriesContext(connection) as queries:
            assert client.get(reverse("game", args=[game.pk])).status_code == 200
        return len(queries)

    before = {u.username: page_queries(u) for u in (ann, eve)}
    # A kept page's own query, then the chat: its latest messages, and whom the viewer muted.
    assert list(before.values()) == [KEPT_PAGE["player"] + 2] * 2
    authors = [ann, bob, eve]
    ChatMessage.objects.bulk_create(
        ChatMessage(
            game=game,
            author=authors[n % 3],
            channel="spectators" if authors[n % 3] == eve else "players",
            text=f"message {n}",
            created_at=START,
        )
        for n in range(300)
    )
    after = {u.username: page_queries(u) for u in (ann, eve)}
    assert before == after
    page = client_for(eve).get(reverse("game", args=[game.pk])).content.decode()
    assert page.count('class="chat-message"') == chat.LATEST
