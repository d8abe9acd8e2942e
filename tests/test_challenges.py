"""Challenges, invite links, withdraw, abort and rematch (games/play/challenges.py): the
services, their refusals (a clear sentence, nothing changed), the mail, the lobby, the pages,
and an invite token that only its creator (and whoever has the link) ever sees."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.core import mail
from django.db import transaction
from django.test import Client
from django.urls import reverse

from games import clock
from games.accounts.guests import guest_create
from games.archive import selectors
from games.chat import service as chat
from games.mail import notices, outbox, preferences
from games.models import Game, Move, Outbox, PlayerResult, Seat
from games.play import challenges, core, sweeps
from tests.conftest import FIXED_SEED, a_legal_move, play_to_the_end, seat_user, to_move
from tests.worker_fixtures import Queued, make_game, make_player

ATOM = "{http://www.w3.org/2005/Atom}"
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("queued")]

START = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def challenge(creator: Any, *names: str, seats: int = 2, bots: tuple[str, ...] = ()) -> Game:
    plans = [core.SeatPlan()] + [core.SeatPlan() for _ in range(seats - 1 - len(bots))]
    plans += [core.SeatPlan(bot=b) for b in bots]
    return core.game_create(
        kind="cornmaze",
        creator=creator,
        options={"size": 8},
        clock_choice="P3D",
        seats=plans,
        reserved=challenges.challenged_players(names=list(names), creator=creator),
    )


def snapshot() -> list[tuple[Any, ...]]:
    return [
        *Game.objects.order_by("pk").values_list("pk", "status", "version", "result_reason"),
        *Seat.objects.order_by("pk").values_list("pk", "user_id", "reserved_for_id", "joined_at"),
        *Outbox.objects.order_by("pk").values_list("pk", "kind", "user_id"),
    ]


def client_for(user: Any) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


# --- challenges ---------------------------------------------------------------------------


def test_a_challenge_keeps_seats_mails_once_and_starts_when_all_accept() -> None:
    alice, bob, carol = make_player("alice"), make_player("bob"), make_player("carol")
    game = challenge(alice, "bob", "Carol", seats=3)
    assert game.status == Game.Status.OPEN
    seats = list(game.seats.order_by("index"))
    assert [s.user_id for s in seats] == [alice.pk, None, None]
    assert [s.reserved_for_id for s in seats] == [None, bob.pk, carol.pk]
    assert [s.name for s in seats[1:]] == ["bob (challenged)", "carol (challenged)"]
    # A mail to each challenged player, once.
    rows = list(Outbox.objects.filter(kind="challenge").order_by("seat"))
    assert [(r.user_id, r.seat, r.ply) for r in rows] == [(bob.pk, 1, 0), (carol.pk, 2, 0)]
    for row in rows:
        assert outbox.outbox_send(outbox_id=row.pk) == "sent"
        assert outbox.outbox_send(outbox_id=row.pk) is None
    assert len(mail.outbox) == 2
    assert mail.outbox[0].subject == f"alice challenges you to a Corn maze: #{game.pk}"
    assert reverse("game", args=[game.pk]) in mail.outbox[0].body
    # Not in the open games: every seat is kept; in each challenged player's lobby.
    assert game.pk not in [g.id for g in selectors.lobby_lists().open]
    assert [s.game_id for s in selectors.challenges_for(bob)] == [game.pk]
    # Nobody else takes a kept seat.
    with pytest.raises(core.GameError, match="Every seat is taken"):
        core.game_join(game_id=game.pk, user=make_player())
    challenges.challenge_accept(game_id=game.pk, user=bob)
    assert Game.objects.get(pk=game.pk).status == Game.Status.OPEN
    challenges.challenge_accept(game_id=game.pk, user=carol)
    game.refresh_from_db()
    assert game.status == Game.Status.ACTIVE
    assert list(game.seats.order_by("index").values_list("user_id", flat=True)) == [
        alice.pk,
        bob.pk,
        carol.pk,
    ]
    assert selectors.challenges_for(bob) == []


def test_a_challenge_beside_an_open_seat_is_listed_and_the_open_seat_joinable() -> None:
    alice, bob = make_player("alice"), make_player("bob")
    game = challenge(alice, "bob", seats=3)
    assert game.pk in [g.id for g in selectors.lobby_lists().open]
    stranger = make_player()
    seat = core.game_join(game_id=game.pk, user=stranger)
    assert seat.index == 2
    assert Game.objects.get(pk=game.pk).status == Game.Status.OPEN  # bob has not accepted
    challenges.challenge_accept(game_id=game.pk, user=bob)
    assert Game.objects.get(pk=game.pk).status == Game.Status.ACTIVE


def test_the_names_that_cannot_be_challenged_say_why_and_make_nothing() -> None:
    alice = make_player("alice")
    make_player("bob")
    guest = guest_create()
    before = snapshot()
    refusals = {
        ("alice",): "You cannot challenge yourself",
        ("nobody",): "There is no player called nobody",
        (guest.username,): "is a guest: invite guests with a private link",
        ("strong",): "is a bot: bots need no challenge",
        ("Bot (simple)",): "is a bot",
        ("Bot",): "is a bot",
        ("bob", "BOB"): "You named BOB twice",
    }
    for names, message in refusals.items():
        with pytest.raises(core.GameError, match=re.escape(message)):
            challenge(alice, *names, seats=3)
    with pytest.raises(core.GameError, match="has no seat for people besides yours"):
        challenge(alice, "bob", seats=2, bots=("simple",))
    assert snapshot() == before


def test_accepting_again_says_where_the_game_is() -> None:
    alice, bob = make_player("alice"), make_player("bob")
    game = challenge(alice, "bob", seats=2)
    challenges.challenge_accept(game_id=game.pk, user=bob)
    with pytest.raises(core.GameError, match="You have accepted already: the game has started"):
        challenges.challenge_accept(game_id=game.pk, user=bob)
    core.game_resign(game_id=game.pk, user=alice)
    before = snapshot()
    with pytest.raises(core.GameError, match="You have accepted already, and the game is over"):
        challenges.challenge_accept(game_id=game.pk, user=bob)
    assert snapshot() == before


def test_a_declined_challenge_is_listed_without_a_replay_or_a_rating() -> None:
    alice, bob = make_player("alice"), make_player("bob")
    declined = challenge(alice, "bob", seats=2)
    challenges.challenge_decline(game_id=declined.pk, user=bob)
    played = challenge(alice, "bob", seats=2)
    challenges.challenge_accept(game_id=played.pk, user=bob)
    core.move_submit(
        game_id=played.pk,
        user=seat_user(played, to_move(played)),
        number=0,
        move={"shifts": a_legal_move(played)},
    )
    core.game_resign(game_id=played.pk, user=alice)
    client = client_for(alice)
    for url in (reverse("lobby"), reverse("archive"), reverse("player", args=["alice"])):
        listing = client.get(url).content.decode()
        assert reverse("game", args=[declined.pk]) in listing, url
        assert reverse("game_replay", args=[played.pk]) in listing, url
        assert reverse("game_replay", args=[declined.pk]) not in listing, url
    archive = client.get(reverse("archive")).content.decode()
    assert "bob (declined)" in archive and "declined, no result" in archive
    assert "(challenged)" not in archive
    # The feed links a game with no replay to its page: every entry its own link and id.
    feed = ET.fromstring(client.get(reverse("player_feed", args=["alice"])).content)
    entries = feed.findall(f"{ATOM}entry")
    links = {e.find(f"{ATOM}link").get("href").split("testserver")[-1] for e in entries}
    assert links == {declined.get_absolute_url(), reverse("game_replay", args=[played.pk])}
    assert len({e.find(f"{ATOM}id").text for e in entries}) == 2
    assert "alice vs bob (declined)" in ET.tostring(feed, encoding="unicode")
    page = client.get(reverse("game", args=[declined.pk])).content.decode()
    assert "a challenged player said no" in page
    assert "Not rated: a game with no result changes nobody" in page and "Rated game." not in page
    assert reverse("game_replay", args=[declined.pk]) not in page
    assert "<p>No moves.</p>" in page and "No moves yet" not in page  # none will come
    assert (
        reverse("game_replay", args=[played.pk])
        in client.get(played.get_absolute_url()).content.decode()
    )


def test_decline_calls_it_off_and_a_second_answer_is_refused() -> None:
    alice, bob, carol = make_player("alice"), make_player("bob"), make_player("carol")
    game = challenge(alice, "bob", "carol", seats=3)
    challenges.challenge_accept(game_id=game.pk, user=bob)
    with pytest.raises(core.GameError, match="You have accepted already"):
        challenges.challenge_accept(game_id=game.pk, user=bob)
    with pytest.raises(core.GameError, match="not for you"):
        challenges.challenge_accept(game_id=game.pk, user=make_player())
    # The challenger cannot decline their own challenge: they are told how to call it off.
    before = snapshot()
    with pytest.raises(
        core.GameError, match="your own challenge: .Withdraw this game. calls it off"
    ):
        challenges.challenge_decline(game_id=game.pk, user=alice)
    assert challenges.decline_refusal(game=game, user=alice) == (
        'This is your own challenge: "Withdraw this game" calls it off.'
    )
    assert snapshot() == before
    challenges.challenge_decline(game_id=game.pk, user=carol)
    game.refresh_from_db()
    assert (game.status, game.result_reason) == (Game.Status.ABORTED, "declined")
    before = snapshot()
    for answer in (challenges.challenge_accept, challenges.challenge_decline):
        with pytest.raises(core.GameError, match="declined, so it will not start"):
            answer(game_id=game.pk, user=carol)
    assert snapshot() == before
    # Carol's seat is still kept for her, but the page asks no answer of her any more.
    body = client_for(carol).get(reverse("game", args=[game.pk])).content.decode()
    assert "a challenged player said no" in body
    assert 'id="challenge-answer"' not in body and 'id="accept"' not in body
    # The unsent challenge mail is not wanted any more.
    row = Outbox.objects.get(kind="challenge", user=carol)
    assert outbox.outbox_send(outbox_id=row.pk) == "skipped"
    assert not PlayerResult.objects.exists()


def test_the_seat_of_the_player_who_declined_says_so_and_the_others_stay_challenged() -> None:
    alice, carol = make_player("alice"), make_player("carol")
    make_player("bob")
    game = challenge(alice, "bob", "carol", seats=3)
    challenges.challenge_decline(game_id=game.pk, user=carol)
    for url in (game.get_absolute_url(), reverse("archive"), reverse("lobby")):
        page = client_for(alice).get(url).content.decode()
        assert "carol (declined)" in page and "bob (challenged)" in page, url
        assert "carol (challenged)" not in page and "bob (declined)" not in page, url


def test_a_decline_mails_the_challenger_once_who_declined_which_game_and_where_to_go(
    django_capture_on_commit_callbacks, queued: Queued
) -> None:
    alice, bob = make_player("alice"), make_player("bob")
    game = core.game_create(
        kind="cornmaze",
        creator=alice,
        options={"size": 6},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
        clock_options={"bank_days": 7},
        reserved=[bob],
    )
    queued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        challenges.challenge_decline(game_id=game.pk, user=bob)
    (row,) = Outbox.objects.filter(game=game, kind="declined")
    assert (row.user_id, row.seat, row.ply, row.status) == (alice.pk, 0, 0, "pending")
    assert queued.mails == [row.pk]  # its task, queued on commit
    # A second answer is refused and makes no second mail.
    with pytest.raises(core.GameError, match="declined, so it will not start"):
        challenges.challenge_decline(game_id=game.pk, user=bob)
    assert Outbox.objects.filter(game=game, kind="declined").count() == 1
    # Never lost: had the task not come, the sweep would queue the mail again.
    later = clock.now() + outbox.task_grace() + timedelta(seconds=1)
    assert row in outbox.due_mails(later).filter(kind="declined")
    # Sent once, however often its task runs.
    assert outbox.outbox_send(outbox_id=row.pk) == "sent"
    assert outbox.outbox_send(outbox_id=row.pk) is None
    (message,) = mail.outbox
    assert message.to == ["alice@example.com"]
    assert message.subject == f"bob declined your challenge: Corn maze #{game.pk}"
    html = message.alternatives[0][0]
    settings_said = "6×6 board, 3 days per move, a time bank of 7 days, rated"
    assert f"bob declined your challenge to a Corn maze: #{game.pk} ({settings_said})." in (
        message.body
    )
    assert "<strong>bob</strong> declined your challenge to a <strong>Corn maze</strong>" in html
    assert f"#{game.pk}</a> ({settings_said})." in html
    for body in (message.body, html):
        assert "will not start" in body
        assert django_settings.SITE_URL + reverse("game_new", args=["cornmaze"]) in body
        assert django_settings.SITE_URL + reverse("lobby") in body
        assert django_settings.SITE_URL + game.get_absolute_url() in body
    assert "List-Unsubscribe" in message.extra_headers
    # Bob, who declined, gets no mail about it.
    assert not Outbox.objects.filter(game=game, user=bob).exclude(kind="challenge").exists()


def test_a_declined_rematch_offer_mails_the_player_who_offered_it() -> None:
    game = play_to_the_end(make_game(make_player(), make_player()))
    offerer, other = seat_user(game, 0), seat_user(game, 1)
    rematch = challenges.rematch_offer(game_id=game.pk, user=offerer)
    challenges.challenge_decline(game_id=rematch.pk, user=other)
    (row,) = Outbox.objects.filter(game=rematch, kind="declined")
    assert row.user_id == offerer.pk
    assert outbox.outbox_send(outbox_id=row.pk) == "sent"
    (message,) = mail.outbox
    name = other.get_username()
    assert message.subject == f"{name} declined your rematch offer: Corn maze #{rematch.pk}"
    assert f"the same game as #{game.pk} with the seats turned" in message.body


def test_no_decline_mail_to_a_challenger_who_turned_challenge_mails_off() -> None:
    alice, bob, carol = make_player("alice"), make_player("bob"), make_player("carol")
    preferences.preferences_update(
        user=alice, turn_mails="immediate", reminder=True, game_over=True, challenge=False
    )
    game = challenge(alice, "bob")
    challenges.challenge_decline(game_id=game.pk, user=bob)
    assert not Outbox.objects.filter(kind="declined").exists()
    # Nor to one without a verified address.
    unverified = make_player(verified=False)
    game = challenge(unverified, "bob")
    challenges.challenge_decline(game_id=game.pk, user=bob)
    assert not Outbox.objects.filter(kind="declined").exists()
    # Turned off after the decline, before the mail went out: not sent.
    game = challenge(carol, "bob")
    challenges.challenge_decline(game_id=game.pk, user=bob)
    (row,) = Outbox.objects.filter(kind="declined")
    preferences.preferences_update(
        user=carol, turn_mails="immediate", reminder=True, game_over=True, challenge=False
    )
    assert outbox.outbox_send(outbox_id=row.pk) == "skipped"
    assert not [m for m in mail.outbox if "declined" in m.subject]


def test_the_decline_mails_unsubscribe_link_stops_challenge_mails() -> None:
    alice, bob = make_player("alice"), make_player("bob")
    game = challenge(alice, "bob")
    challenges.challenge_decline(game_id=game.pk, user=bob)
    (row,) = Outbox.objects.filter(kind="declined")
    assert outbox.outbox_send(outbox_id=row.pk) == "sent"
    (message,) = mail.outbox
    assert "mails about challenges and rematch offers" in message.body
    unsubscribe = message.extra_headers["List-Unsubscribe"].strip("<>")
    assert Client().post(unsubscribe.removeprefix(django_settings.SITE_URL)).status_code == 200
    prefs = preferences.preferences_for(User.objects.get(pk=alice.pk))
    assert (prefs.challenge, prefs.turn_mails) == (False, "immediate")


def sent_to(user: User) -> list[Any]:
    return [m for m in mail.outbox if m.to == [f"{user.get_username()}@example.com"]]


def mailed_once_each(
    game: Game, kind: str, people: list[tuple[Any, int]], again: Any
) -> list[Outbox]:
    """The game's mails of this kind: one row for each (person, seat) at ply 0, in seat order;
    telling them again (`again`, inside a transaction) makes no other row, and each is sent
    once. Returns the rows."""
    rows = list(Outbox.objects.filter(game=game, kind=kind).order_by("seat"))
    assert [(r.user_id, r.seat, r.ply) for r in rows] == [(p.pk, seat, 0) for p, seat in people]
    with transaction.atomic():
        again()
    assert Outbox.objects.filter(game=game, kind=kind).count() == len(rows)
    for row in rows:
        assert outbox.outbox_send(outbox_id=row.pk) == "sent"
        assert outbox.outbox_send(outbox_id=row.pk) is None
    return rows


def test_a_decline_mails_the_players_who_had_accepted_once_each_in_their_own_words(
    django_capture_on_commit_callbacks, queued: Queued
) -> None:
    alice, bob, carol = make_player("alice"), make_player("bob"), make_player("carol")
    dave = make_player("dave")
    game = challenge(alice, "bob", "carol", "dave", seats=4)
    challenges.challenge_accept(game_id=game.pk, user=bob)
    challenges.challenge_accept(game_id=game.pk, user=carol)
    queued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        challenges.challenge_decline(game_id=game.pk, user=dave)
    # Once each: a second decline is refused, and telling the mail again makes no second row.
    with pytest.raises(core.GameError, match="declined, so it will not start"):
        challenges.challenge_decline(game_id=game.pk, user=dave)
    rows = mailed_once_each(
        game,
        "declined",
        [(alice, 0), (bob, 1), (carol, 2)],
        lambda: notices.challenge_declined(game=Game.objects.get(pk=game.pk)),
    )
    assert sorted(queued.mails) == sorted(r.pk for r in rows)
    assert len(mail.outbox) == 3 and not sent_to(dave)
    (to_alice,) = sent_to(alice)
    assert to_alice.subject == f"dave declined your challenge: Corn maze #{game.pk}"
    settings_said = "8×8 board, 3 days per move, rated"
    for player in (bob, carol):
        (message,) = sent_to(player)
        assert message.subject == f"dave declined alice's challenge: Corn maze #{game.pk}"
        html = message.alternatives[0][0]
        assert (
            "dave declined alice's challenge to a Corn maze that you had accepted: "
            f"#{game.pk} ({settings_said})."
        ) in message.body
        assert (
            "<strong>dave</strong> declined alice's challenge to a <strong>Corn maze</strong> "
            "that you had accepted: "
        ) in html
        for body in (message.body, html):
            assert "your challenge" not in body
            assert "The game is off for everyone: it will not start, and nobody has a result." in (
                body
            )
            assert django_settings.SITE_URL + reverse("lobby") in body
            assert django_settings.SITE_URL + game.get_absolute_url() in body
        assert "find a game in the lobby" in message.body
        assert "List-Unsubscribe" in message.extra_headers


def test_the_accepted_players_decline_mail_follows_their_challenge_setting() -> None:
    alice, bob, carol = make_player("alice"), make_player("bob"), make_player("carol")
    unverified = make_player("erin", verified=False)
    preferences.preferences_update(
        user=bob, turn_mails="immediate", reminder=True, game_over=True, challenge=False
    )
    make_player("dave")
    game = challenge(alice, "bob", "carol", "erin", "dave", seats=5)
    for player in (bob, carol, unverified):
        challenges.challenge_accept(game_id=game.pk, user=player)
    challenges.challenge_decline(game_id=game.pk, user=User.objects.get(username="dave"))
    # Bob turned challenge mails off, Erin has no verified address: neither gets a row.
    assert set(
        Outbox.objects.filter(game=game, kind="declined").values_list("user_id", flat=True)
    ) == {alice.pk, carol.pk}
    # Carol turns them off before hers goes out: it is not sent.
    preferences.preferences_update(
        user=carol, turn_mails="immediate", reminder=True, game_over=True, challenge=False
    )
    row = Outbox.objects.get(game=game, kind="declined", user=carol)
    assert outbox.outbox_send(outbox_id=row.pk) == "skipped"
    assert not sent_to(carol)


def test_a_decline_mails_a_player_who_joined_an_open_seat_but_no_guest_nor_bot() -> None:
    alice, dave = make_player("alice"), make_player("dave")
    make_player("bob")
    game = challenge(alice, "bob", seats=5, bots=("simple",))
    guest = guest_create()
    core.game_join(game_id=game.pk, user=dave)
    core.game_join(game_id=game.pk, user=guest)
    challenges.challenge_decline(game_id=game.pk, user=User.objects.get(username="bob"))
    rows = Outbox.objects.filter(game=game, kind="declined")
    assert set(rows.values_list("user_id", flat=True)) == {alice.pk, dave.pk}
    assert outbox.outbox_send(outbox_id=rows.get(user=dave).pk) == "sent"
    (message,) = sent_to(dave)
    assert "bob declined alice's challenge to a Corn maze that you had joined: " in message.body


def test_a_declined_rematch_offer_mails_the_player_who_had_accepted_it() -> None:
    ann, ben, cy = make_player("ann"), make_player("ben"), make_player("cy")
    game = make_game(ann, ben, cy)
    core.game_resign(game_id=game.pk, user=ben)
    core.game_resign(game_id=game.pk, user=cy)
    rematch = challenges.rematch_offer(game_id=game.pk, user=ann)
    challenges.challenge_accept(game_id=rematch.pk, user=ben)
    challenges.challenge_decline(game_id=rematch.pk, user=cy)
    row = Outbox.objects.get(game=rematch, kind="declined", user=ben)
    assert outbox.outbox_send(outbox_id=row.pk) == "sent"
    (message,) = sent_to(ben)
    assert message.subject == f"cy declined ann's rematch offer: Corn maze #{rematch.pk}"
    assert (
        f"cy declined ann's rematch offer that you had accepted: Corn maze #{rematch.pk} "
    ) in message.body
    assert f"the same game as #{game.pk} with the seats turned" in message.body
    assert Outbox.objects.filter(game=rematch, kind="declined", user=ann).count() == 1


def test_withdraw_is_the_creators_and_only_before_the_start() -> None:
    alice, bob = make_player("alice"), make_player("bob")
    game = challenge(alice, "bob")
    with pytest.raises(core.GameError, match="Only the player who made this game"):
        challenges.game_withdraw(game_id=game.pk, user=bob)
    challenges.game_withdraw(game_id=game.pk, user=alice)
    game.refresh_from_db()
    assert (game.status, game.result_reason) == (Game.Status.ABORTED, "withdrawn")
    before = snapshot()
    with pytest.raises(core.GameError, match="withdrawn by its creator"):
        challenges.challenge_accept(game_id=game.pk, user=bob)
    with pytest.raises(core.GameError, match="withdrawn by its creator"):
        challenges.game_withdraw(game_id=game.pk, user=alice)
    assert snapshot() == before
    assert selectors.challenges_for(bob) == []
    # An open game without a challenge too; a started one cannot be.
    open_game = core.game_create(
        kind="cornmaze",
        creator=alice,
        options={"size": 8},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
    )
    challenges.game_withdraw(game_id=open_game.pk, user=alice)
    assert Game.objects.get(pk=open_game.pk).status == Game.Status.ABORTED
    running = challenge(alice, "bob")
    challenges.challenge_accept(game_id=running.pk, user=bob)
    with pytest.raises(core.GameError, match="cannot be withdrawn"):
        challenges.game_withdraw(game_id=running.pk, user=alice)


def test_a_withdrawn_challenge_mails_everyone_who_waited_on_it_once_but_not_its_creator(
    django_capture_on_commit_callbacks, queued: Queued
) -> None:
    alice, bob, carol = make_player("alice"), make_player("bob"), make_player("carol")
    dave = make_player("dave")
    game = challenge(alice, "bob", "carol", seats=6, bots=("simple",))
    challenges.challenge_accept(game_id=game.pk, user=bob)
    core.game_join(game_id=game.pk, user=dave)
    core.game_join(game_id=game.pk, user=guest_create())
    # Carol has had her challenge's mail, and not answered it.
    challenge_mail = Outbox.objects.get(game=game, kind="challenge", user=carol)
    assert outbox.outbox_send(outbox_id=challenge_mail.pk) == "sent"
    queued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        challenges.game_withdraw(game_id=game.pk, user=alice)
    # Once each: a second withdrawal is refused, and telling the mail again makes no second row.
    with pytest.raises(core.GameError, match="withdrawn by its creator"):
        challenges.game_withdraw(game_id=game.pk, user=alice)
    mail.outbox.clear()
    # Bob accepted, Carol had not answered, Dave joined an open seat; not Alice, who withdrew
    # it, nor the guest, nor the bot.
    rows = mailed_once_each(
        game,
        "withdrawn",
        [(bob, 1), (carol, 2), (dave, 3)],
        lambda: notices.game_withdrawn(game=Game.objects.get(pk=game.pk)),
    )
    assert sorted(queued.mails) == sorted(r.pk for r in rows)
    assert len(mail.outbox) == 3 and not sent_to(alice)
    settings_said = "8×8 board, 3 days per move, not rated"  # a guest joined it
    for player, answered in ((bob, "accepted"), (carol, "not answered yet"), (dave, "joined")):
        (message,) = sent_to(player)
        assert message.subject == f"alice withdrew the challenge: Corn maze #{game.pk}"
        html = message.alternatives[0][0]
        assert (
            f"alice withdrew the challenge to a Corn maze that you had {answered}: "
            f"#{game.pk} ({settings_said})."
        ) in message.body
        assert (
            "<strong>alice</strong> withdrew the challenge to a <strong>Corn maze</strong> "
            f"that you had {answered}: "
        ) in html
        for body in (message.body, html):
            assert "The game is off for everyone: it will not start, and nobody has a result." in (
                body
            )
            assert django_settings.SITE_URL + game.get_absolute_url() in body
            assert django_settings.SITE_URL + reverse("lobby") in body
        assert "mails about challenges and rematch offers" in message.body
        assert "List-Unsubscribe" in message.extra_headers


def test_a_challenge_withdrawn_before_its_mail_went_out_mails_nobody_about_it() -> None:
    alice, bob = make_player("alice"), make_player("bob")
    game = challenge(alice, "bob")
    challenges.game_withdraw(game_id=game.pk, user=alice)
    # Neither the challenge, which is off, nor its withdrawal, which Bob never had to know of.
    challenge_mail = Outbox.objects.get(game=game, kind="challenge", user=bob)
    assert outbox.outbox_send(outbox_id=challenge_mail.pk) == "skipped"
    withdrawn = Outbox.objects.get(game=game, kind="withdrawn", user=bob)
    assert outbox.outbox_send(outbox_id=withdrawn.pk) == "skipped"
    withdrawn.refresh_from_db()
    assert withdrawn.note == "they never had the challenge's mail"
    assert not sent_to(bob)


def test_a_withdrawn_open_game_mails_the_players_who_joined_it() -> None:
    alice, bob = make_player("alice"), make_player("bob")
    game = core.game_create(
        kind="cornmaze",
        creator=alice,
        options={"size": 8},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan(), core.SeatPlan()],
    )
    core.game_join(game_id=game.pk, user=bob)
    challenges.game_withdraw(game_id=game.pk, user=alice)
    (row,) = Outbox.objects.filter(game=game, kind="withdrawn")
    assert (row.user_id, row.seat) == (bob.pk, 1)
    assert outbox.outbox_send(outbox_id=row.pk) == "sent"
    (message,) = mail.outbox
    assert message.subject == f"alice withdrew the game: Corn maze #{game.pk}"
    assert (
        f"alice withdrew the Corn maze that you had joined: #{game.pk} "
        "(8×8 board, 3 days per move, rated)."
    ) in message.body
    assert "challenge" not in message.body.split("mazesite ·")[0]
    # Nobody else waited on an open game its creator withdraws alone.
    lonely = core.game_create(
        kind="cornmaze",
        creator=alice,
        options={"size": 8},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
    )
    challenges.game_withdraw(game_id=lonely.pk, user=alice)
    assert not Outbox.objects.filter(game=lonely).exists()


def challenge_mails_send(game: Game) -> None:
    """Send the game's challenge mails still waiting, as the worker would, and forget them."""
    for row in Outbox.objects.filter(game=game, kind="challenge", status="pending"):
        outbox.outbox_send(outbox_id=row.pk)
    mail.outbox.clear()


def test_a_withdrawn_rematch_offer_mails_the_players_it_waited_for() -> None:
    ann, ben, cy = make_player("ann"), make_player("ben"), make_player("cy")
    game = make_game(ann, ben, cy)
    core.game_resign(game_id=game.pk, user=ben)
    core.game_resign(game_id=game.pk, user=cy)
    rematch = challenges.rematch_offer(game_id=game.pk, user=ann)
    challenges.challenge_accept(game_id=rematch.pk, user=ben)
    challenge_mails_send(rematch)
    challenges.game_withdraw(game_id=rematch.pk, user=ann)
    rows = Outbox.objects.filter(game=rematch, kind="withdrawn")
    assert set(rows.values_list("user_id", flat=True)) == {ben.pk, cy.pk}
    for row in rows:
        assert outbox.outbox_send(outbox_id=row.pk) == "sent"
    for player, answered in ((ben, "accepted"), (cy, "not answered yet")):
        (message,) = sent_to(player)
        assert message.subject == f"ann withdrew the rematch offer: Corn maze #{rematch.pk}"
        assert (
            f"ann withdrew the rematch offer that you had {answered}: Corn maze #{rematch.pk} "
        ) in message.body
        assert f"the same game as #{game.pk} with the seats turned" in message.body


def test_the_withdrawal_mail_follows_the_challenge_setting_and_its_unsubscribe_link() -> None:
    alice, bob, carol = make_player("alice"), make_player("bob"), make_player("carol")
    make_player("dave")
    unverified = make_player("erin", verified=False)
    preferences.preferences_update(
        user=bob, turn_mails="immediate", reminder=True, game_over=True, challenge=False
    )
    game = challenge(alice, "bob", "carol", "dave", "erin", seats=6)
    challenges.challenge_accept(game_id=game.pk, user=bob)
    challenges.challenge_accept(game_id=game.pk, user=unverified)
    challenge_mails_send(game)
    challenges.game_withdraw(game_id=game.pk, user=alice)
    # Bob turned challenge mails off, Erin has no verified address: neither gets a row.
    rows = Outbox.objects.filter(game=game, kind="withdrawn")
    assert set(rows.values_list("user__username", flat=True)) == {"carol", "dave"}
    # Carol turns them off before hers goes out: it is not sent.
    preferences.preferences_update(
        user=carol, turn_mails="immediate", reminder=True, game_over=True, challenge=False
    )
    assert outbox.outbox_send(outbox_id=rows.get(user=carol).pk) == "skipped"
    assert not sent_to(carol)
    # Dave's mail's unsubscribe link switches challenge mails off, and only them.
    assert outbox.outbox_send(outbox_id=rows.get(user__username="dave").pk) == "sent"
    (message,) = mail.outbox
    unsubscribe = message.extra_headers["List-Unsubscribe"].strip("<>")
    assert Client().post(unsubscribe.removeprefix(django_settings.SITE_URL)).status_code == 200
    prefs = preferences.preferences_for(User.objects.get(username="dave"))
    assert (prefs.challenge, prefs.turn_mails) == (False, "immediate")


def test_a_challenge_expires_after_its_days() -> None:
    alice, bob = make_player("alice"), make_player("bob")
    with time_machine.travel(START, tick=False) as traveller:
        game = challenge(alice, "bob")
        traveller.shift(timedelta(days=challenges.CHALLENGE_DAYS, seconds=1))
        before = snapshot()
        with pytest.raises(core.GameError, match="has expired"):
            challenges.challenge_accept(game_id=game.pk, user=bob)
        assert snapshot() == before
        assert sweeps.sweep().challenges == 1
        assert sweeps.sweep().challenges == 0
        game.refresh_from_db()
        assert (game.status, game.result_reason) == (Game.Status.ABORTED, "expired")
        with pytest.raises(core.GameError, match="has expired"):
            challenges.challenge_accept(game_id=game.pk, user=bob)


def test_a_challenge_everyone_answered_does_not_expire_while_it_waits_for_an_open_seat() -> None:
    # What the sweep checks again under the game's lock: every challenged player may have
    # accepted since it read its list. The game then waits on for its open seat.
    alice, bob = make_player("alice"), make_player("bob")
    with time_machine.travel(START, tick=False) as traveller:
        game = challenge(alice, "bob", seats=3)
        traveller.shift(timedelta(days=challenges.CHALLENGE_DAYS, seconds=1))
        assert challenges.challenge_expires(game, list(game.seats.all()))
        Seat.objects.filter(game=game, reserved_for=bob).update(user=bob)
        assert not challenges.challenge_expires(game, list(game.seats.all()))
        assert sweeps.sweep().challenges == 0
        game.refresh_from_db()
        assert game.status == Game.Status.OPEN


def test_an_expired_challenge_mails_its_challenger_and_who_had_accepted_naming_who_did_not_answer(
    django_capture_on_commit_callbacks, queued: Queued
) -> None:
    alice, bob, carol = make_player("alice"), make_player("bob"), make_player("carol")
    dave, erin = make_player("dave"), make_player("erin")
    with time_machine.travel(START, tick=False) as traveller:
        game = challenge(alice, "bob", "carol", "dave", seats=6)
        challenges.challenge_accept(game_id=game.pk, user=bob)
        core.game_join(game_id=game.pk, user=erin)
        core.game_join(game_id=game.pk, user=guest_create())
        traveller.shift(timedelta(days=challenges.CHALLENGE_DAYS, seconds=1))
        queued.clear()
        with django_capture_on_commit_callbacks(execute=True):
            assert sweeps.sweep().challenges == 1
        # Once each: the sweep finds nothing more, and telling the mail again makes no row.
        assert sweeps.sweep().challenges == 0
        # Alice, whose challenge it was, Bob, who accepted, and Erin, who joined; not Carol nor
        # Dave, who never answered, nor the guest.
        rows = mailed_once_each(
            game,
            "expired",
            [(alice, 0), (bob, 1), (erin, 4)],
            lambda: notices.challenge_expired(game=Game.objects.get(pk=game.pk)),
        )
        # Their tasks are queued on commit (beside the old challenge mails the sweep queues
        # again, to be skipped: the challenge is not waiting for anyone any more).
        assert {r.pk for r in rows} <= set(queued.mails)
    assert len(mail.outbox) == 3 and not sent_to(carol) and not sent_to(dave)
    settings_said = "8×8 board, 3 days per move, not rated"  # a guest joined it
    (to_alice,) = sent_to(alice)
    assert to_alice.subject == f"Your challenge expired: Corn maze #{game.pk}"
    assert (
        f"Your challenge to a Corn maze expired: #{game.pk} ({settings_said}).\n"
        "carol and dave did not answer in time: it waited 7 days."
    ) in to_alice.body
    assert (
        "<strong>carol and dave</strong> did not answer in time: it waited 7 days."
        in (to_alice.alternatives[0][0])
    )
    assert django_settings.SITE_URL + reverse("game_new", args=["cornmaze"]) in to_alice.body
    for player, answered in ((bob, "accepted"), (erin, "joined")):
        (message,) = sent_to(player)
        assert message.subject == f"alice's challenge expired: Corn maze #{game.pk}"
        assert (
            f"alice's challenge to a Corn maze that you had {answered} expired: "
            f"#{game.pk} ({settings_said}).\n"
            "carol and dave did not answer in time: it waited 7 days."
        ) in message.body
    for message in mail.outbox:
        html = message.alternatives[0][0]
        for body in (message.body, html):
            assert "The game is off for everyone: it will not start, and nobody has a result." in (
                body
            )
            assert django_settings.SITE_URL + game.get_absolute_url() in body
            assert django_settings.SITE_URL + reverse("lobby") in body
        assert "mails about challenges and rematch offers" in message.body
        assert "List-Unsubscribe" in message.extra_headers


def test_an_expired_rematch_offer_mails_the_player_who_offered_it_and_who_accepted() -> None:
    ann, ben, cy = make_player("ann"), make_player("ben"), make_player("cy")
    with time_machine.travel(START, tick=False) as traveller:
        game = make_game(ann, ben, cy)
        core.game_resign(game_id=game.pk, user=ben)
        core.game_resign(game_id=game.pk, user=cy)
        rematch = challenges.rematch_offer(game_id=game.pk, user=ann)
        challenges.challenge_accept(game_id=rematch.pk, user=ben)
        traveller.shift(timedelta(days=challenges.CHALLENGE_DAYS, seconds=1))
        assert sweeps.sweep().challenges == 1
        rows = Outbox.objects.filter(game=rematch, kind="expired")
        assert set(rows.values_list("user_id", flat=True)) == {ann.pk, ben.pk}
        for row in rows:
            assert outbox.outbox_send(outbox_id=row.pk) == "sent"
    (to_ann,) = sent_to(ann)
    assert to_ann.subject == f"Your rematch offer expired: Corn maze #{rematch.pk}"
    assert f"Your rematch offer expired: Corn maze #{rematch.pk} (" in to_ann.body
    (to_ben,) = sent_to(ben)
    assert to_ben.subject == f"ann's rematch offer expired: Corn maze #{rematch.pk}"
    assert f"ann's rematch offer that you had accepted expired: Corn maze #{rematch.pk} (" in (
        to_ben.body
    )
    for message in (to_ann, to_ben):
        assert f"the same game as #{game.pk} with the seats turned" in message.body
        assert "cy did not answer in time: it waited 7 days." in message.body
    assert not sent_to(cy)


def test_the_expiry_mail_follows_the_challenge_setting_and_goes_to_no_bot() -> None:
    alice, bob, carol = make_player("alice"), make_player("bob"), make_player("carol")
    make_player("dave")
    unverified = make_player("erin", verified=False)
    preferences.preferences_update(
        user=alice, turn_mails="immediate", reminder=True, game_over=True, challenge=False
    )
    with time_machine.travel(START, tick=False) as traveller:
        game = challenge(alice, "bob", "carol", "erin", "dave", seats=6, bots=("simple",))
        for player in (bob, carol, unverified):
            challenges.challenge_accept(game_id=game.pk, user=player)
        traveller.shift(timedelta(days=challenges.CHALLENGE_DAYS, seconds=1))
        assert sweeps.sweep().challenges == 1
    # Alice turned challenge mails off, Erin has no verified address, the bot has none at all.
    rows = Outbox.objects.filter(game=game, kind="expired")
    assert set(rows.values_list("user_id", flat=True)) == {bob.pk, carol.pk}
    # Carol turns them off before hers goes out: it is not sent.
    preferences.preferences_update(
        user=carol, turn_mails="immediate", reminder=True, game_over=True, challenge=False
    )
    assert outbox.outbox_send(outbox_id=rows.get(user=carol).pk) == "skipped"
    assert outbox.outbox_send(outbox_id=rows.get(user=bob).pk) == "sent"
    assert [m.to for m in mail.outbox] == [["bob@example.com"]]


# --- abort --------------------------------------------------------------------------------


def test_abort_until_someone_but_the_creator_moves_and_no_results_change(make_cornmaze) -> None:
    game = make_cornmaze()
    creator, other = seat_user(game, 0), seat_user(game, 1)
    # Play until the creator has moved and it is the other's turn.
    if to_move(game) != 0:
        # The other moves first: abortable before that move only.
        challenges.game_abort(game_id=game.pk, user=other)
        game.refresh_from_db()
        assert (game.status, game.result_reason) == (Game.Status.ABORTED, "player_aborted")
        assert not PlayerResult.objects.exists()
        return
    core.move_submit(game_id=game.pk, user=creator, number=0, move={"shifts": a_legal_move(game)})
    game.refresh_from_db()
    assert challenges.abortable(game, list(game.seats.all()))
    challenges.game_abort(game_id=game.pk, user=other)
    game.refresh_from_db()
    assert (game.status, game.result_reason) == (Game.Status.ABORTED, "player_aborted")
    assert not game.seats.exclude(deadline=None).exists()
    assert not PlayerResult.objects.exists()
    # The archive and the feed say how it ended in words, not by its code.
    for url in (reverse("archive"), reverse("archive_feed")):
        listing = Client().get(url).content.decode()
        assert "aborted by a player, no result" in listing and "player_aborted" not in listing
    with pytest.raises(core.GameError, match="The game is over"):
        challenges.game_abort(game_id=game.pk, user=creator)


def test_abort_is_refused_once_another_player_moved(make_cornmaze) -> None:
    game = make_cornmaze()
    for _ in range(2):
        seat = to_move(game)
        core.move_submit(
            game_id=game.pk,
            user=seat_user(game, seat),
            number=game.ply,
            move={"shifts": a_legal_move(game)},
        )
        game.refresh_from_db()
    before = snapshot()
    for index in (0, 1):
        with pytest.raises(core.GameError, match="Too late to abort"):
            challenges.game_abort(game_id=game.pk, user=seat_user(game, index))
    with pytest.raises(core.GameError, match="no seat"):
        challenges.game_abort(game_id=game.pk, user=make_player())
    assert snapshot() == before


# --- rematch ------------------------------------------------------------------------------


POLL = re.compile(r'id="game"[^>]*hx-get="([^"]+)"')


def game_poll(client: Client, game: Game) -> str | None:
    """The address the game's partial polls on this viewer's page, None if it does not poll."""
    return game_poll_of(client.get(reverse("game", args=[game.pk])).content.decode())


def game_poll_of(page: str) -> str | None:
    """The address the game's partial polls on this page, None if it does not poll."""
    found = POLL.search(page)
    return found.group(1).replace("&amp;", "&") if found else None


def test_a_rematch_turns_the_seats_copies_the_options_and_starts_when_all_accept(
    make_cornmaze,
) -> None:
    game = make_cornmaze(seats=3, seed=FIXED_SEED)
    Game.objects.filter(pk=game.pk).update(options={**game.options, "rated": False})
    game = play_to_the_end(game)
    assert game.status == Game.Status.FINISHED
    players = [seat_user(game, i) for i in range(3)]
    rematch = challenges.rematch_offer(game_id=game.pk, user=players[1])
    assert rematch.rematch_of_id == game.pk
    assert rematch.options == {"size": 8, "rated": False}
    assert rematch.clock == game.clock and rematch.kind == game.kind
    seats = list(rematch.seats.order_by("index"))
    # Seats turned one place: seat 1's player in seat 0, seat 2's in 1, seat 0's last.
    assert [s.user_id or s.reserved_for_id for s in seats] == [
        p.pk for p in players[1:] + players[:1]
    ]
    assert seats[0].user_id == players[1].pk  # the offerer is in
    assert [s.is_reserved for s in seats] == [False, True, True]
    # Asked again (a double click, or another player at once), the offer made is the answer;
    # a player it waits for who asked for a rematch too has accepted it.
    for player in (players[1], players[0], players[0]):
        assert challenges.rematch_offer(game_id=game.pk, user=player).pk == rematch.pk
    assert Game.objects.filter(rematch_of=game).count() == 1
    seats = list(rematch.seats.order_by("index"))
    assert [s.user_id for s in seats] == [players[1].pk, None, players[0].pk]
    rematch.refresh_from_db()
    assert rematch.status == Game.Status.OPEN
    challenges.challenge_accept(game_id=rematch.pk, user=players[2])
    rematch.refresh_from_db()
    assert rematch.status == Game.Status.ACTIVE


def test_a_rematch_mail_names_the_game_it_replays() -> None:
    """ "A rematch of your last Corn maze" was wrong once the player had played another since:
    the mail names the game."""
    game = play_to_the_end(make_game(make_player(), make_player()))
    offerer, other = seat_user(game, 0), seat_user(game, 1)
    rematch = challenges.rematch_offer(game_id=game.pk, user=offerer)
    (row,) = Outbox.objects.filter(game=rematch, kind="challenge")
    assert row.user_id == other.pk
    assert outbox.outbox_send(outbox_id=row.pk) == "sent"
    (message,) = mail.outbox
    said = f"offers you a rematch of Corn maze #{game.pk}, the same game"
    assert f"{offerer.get_username()} {said}" in message.body
    assert f"<strong>{offerer.get_username()}</strong> {said}" in message.alternatives[0][0]


def test_a_rematch_keeps_the_clock_options_and_whether_the_game_is_rated() -> None:
    first, second = make_player(), make_player()
    game = core.game_create(
        kind="robotmaze",
        creator=first,
        options={},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
        clock_options={"bank_days": 7, "weekends_off": True},
        rated=False,
    )
    core.game_join(game_id=game.pk, user=second)
    core.game_resign(game_id=game.pk, user=first)
    rematch = challenges.rematch_offer(game_id=game.pk, user=second)
    assert rematch.clock_options == {"bank_days": 7, "weekends_off": True}
    assert rematch.rated is False
    assert [s.bank for s in rematch.seats.order_by("index")] == [timedelta(days=7)] * 2
    challenges.challenge_accept(game_id=rematch.pk, user=first)
    rematch.refresh_from_db()
    assert rematch.status == Game.Status.ACTIVE
    assert rematch.clock_options == {"bank_days": 7, "weekends_off": True}
    assert not rematch.rated


def test_a_rematch_against_bots_starts_at_once_and_refusals_change_nothing(make_user) -> None:
    player = make_player()
    game = core.game_create(
        kind="robotmaze",
        creator=player,
        options={},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan(bot="simple")],
    )
    before = snapshot()
    with pytest.raises(core.GameError, match="once the game is finished"):
        challenges.rematch_offer(game_id=game.pk, user=player)
    with pytest.raises(core.GameError, match="Only a player"):
        challenges.rematch_offer(game_id=game.pk, user=make_player())
    assert snapshot() == before
    core.game_resign(game_id=game.pk, user=player)
    # Nobody else to offer one: the finished game's page does not wait for an offer.
    assert game_poll(client_for(player), game) is None
    rematch = challenges.rematch_offer(game_id=game.pk, user=player)
    assert rematch.status == Game.Status.ACTIVE
    assert [(s.index, s.user_id, s.bot) for s in rematch.seats.order_by("index")] == [
        (0, None, "simple"),
        (1, player.pk, ""),
    ]
    assert not Outbox.objects.filter(kind="challenge").exists()


def test_a_players_finished_game_waits_for_the_rematch_offer_and_shows_it_when_it_comes(
    make_cornmaze,
) -> None:
    """A player's page of a game just finished asks for a rematch offer (a 204 while there is
    none) for REMATCH_WAIT_SECONDS; the other player's offer moves the game's version, so the
    next poll draws the offer. Nobody else's page polls (nor one of a game against bots alone:
    test_a_rematch_against_bots_starts_at_once_and_refusals_change_nothing)."""
    game = play_to_the_end(make_cornmaze())
    assert game.status == Game.Status.FINISHED
    ann, bob = client_for(seat_user(game, 0)), client_for(seat_user(game, 1))
    assert game_poll(client_for(make_player()), game) is None
    assert game_poll(Client(), game) is None
    poll = game_poll(ann, game)
    assert poll is not None and "rematch_until=" in poll
    htmx = {"HTTP_HX_REQUEST": "true"}
    assert ann.get(poll, **htmx).status_code == 204
    plain = reverse("game", args=[game.pk]) + f"?since={game.version}"
    assert ann.get(plain, **htmx).status_code == 286  # a page drawn without the wait stops
    challenges.rematch_offer(game_id=game.pk, user=seat_user(game, 1))
    answer = ann.get(poll, **htmx)
    assert answer.status_code == 200
    assert 'id="rematch-offer"' in answer.content.decode()
    assert game_poll(ann, game) is None  # the offer is there: nothing more to wait for
    # Past the wait, a page no longer asks, and an old page's poll is told to stop.
    other = play_to_the_end(make_cornmaze())
    cat = client_for(seat_user(other, 0))
    waiting = game_poll(cat, other)
    assert waiting is not None
    later = clock.now() + timedelta(seconds=django_settings.REMATCH_WAIT_SECONDS + 1)
    with time_machine.travel(later):
        assert game_poll(cat, other) is None
        assert cat.get(waiting, **htmx).status_code == 286
    assert game_poll(bob, game) is None  # the offerer's own: its offer is there


# --- invite links -------------------------------------------------------------------------


def invite_game(creator: Any, seats: int = 2, reserved: tuple[User, ...] = ()) -> Game:
    return core.game_create(
        kind="cornmaze",
        creator=creator,
        options={"size": 8},
        clock_choice="P3D",
        seats=[core.SeatPlan()] * seats,
        reserved=reserved,
        invite=True,
    )


def test_a_private_game_is_unlisted_and_joined_only_with_its_link() -> None:
    alice = make_player("alice")
    game = invite_game(alice)
    assert len(game.invite_token) >= 32
    assert game.pk not in [g.id for g in selectors.lobby_lists().open]
    before = snapshot()
    for token in (None, "", "x", game.invite_token[:-1]):
        with pytest.raises(core.GameError, match="This game is private"):
            core.game_join(game_id=game.pk, user=make_player(), token=token)
    assert snapshot()[: len(before)] == before[: len(before)]
    anonymous = Client()
    url = reverse("game_invite", args=[game.pk, game.invite_token])
    page = anonymous.get(url)
    assert page.status_code == 200 and 'id="join-invite"' in page.content.decode()
    assert anonymous.get(reverse("game_invite", args=[game.pk, "wrong"])).status_code == 404
    response = anonymous.post(url)
    assert response.status_code == 302
    game.refresh_from_db()
    assert game.status == Game.Status.ACTIVE
    joined = game.seats.get(index=1).user
    assert joined is not None and joined.profile.is_guest


def test_a_private_game_waiting_for_players_is_not_found_without_its_link() -> None:
    alice, carol = make_player("alice"), make_player("carol")
    game = invite_game(alice, seats=4, reserved=(carol,))
    chat.chat_post(game_id=game.pk, user=alice, text="Waiting for my friends")
    game_url = reverse("game", args=[game.pk])
    hidden = [
        game_url,
        f"{game_url}?since={game.version - 1}",
        f"{game_url}?since={game.version}",  # nothing new: still not a 204
        reverse("game_record", args=[game.pk]),
        reverse("game_chat", args=[game.pk]),
        reverse("game_replay", args=[game.pk]),
    ]
    for viewer in (make_player(), None):
        client = client_for(viewer)
        for url in hidden:
            for htmx in ({}, {"HTTP_HX_REQUEST": "true"}):
                answer = client.get(url, **htmx)
                if answer.status_code == 302:  # to the game page, from the chat or the replay
                    answer = client.get(answer["Location"], **htmx)
                assert answer.status_code == 404, (viewer, url, htmx)
        before = snapshot()
        assert client.post(reverse("game_join", args=[game.pk])).status_code == 404
        assert snapshot() == before
        player_page = client.get(reverse("player", args=["alice"])).content.decode()
        assert game_url not in player_page
    # Its players and those it keeps a seat for see it, as does whoever has the link.
    for viewer in (alice, carol):
        client = client_for(viewer)
        assert client.get(game_url).status_code == 200
        assert client.get(reverse("game_record", args=[game.pk])).status_code == 200
    assert game_url in client_for(alice).get(reverse("lobby")).content.decode()
    invited = client_for(make_player())
    invite_url = reverse("game_invite", args=[game.pk, game.invite_token])
    page = invited.get(invite_url).content.decode()
    # The page through the link polls through the link, and is answered.
    assert game_poll_of(page) == f"{invite_url}?since={game.version}"
    assert invited.get(game_poll_of(page), HTTP_HX_REQUEST="true").status_code == 204
    core.game_join(game_id=game.pk, user=make_player(), token=game.invite_token)
    answer = invited.get(game_poll_of(page), HTTP_HX_REQUEST="true")
    assert answer.status_code == 200 and 'id="join-invite"' in answer.content.decode()
    # Once it has started, anyone may watch it.
    core.game_join(game_id=game.pk, user=make_player(), token=game.invite_token)
    challenges.challenge_accept(game_id=game.pk, user=carol)
    assert client_for(None).get(game_url).status_code == 200
    assert client_for(None).get(reverse("game_record", args=[game.pk])).status_code == 200


def test_an_invited_visitor_signs_in_back_to_the_invite_and_meets_no_dead_link() -> None:
    alice = make_player("alice")
    bob = User.objects.create_user(username="bob-invited", password="a-long-passphrase")
    game = invite_game(alice)
    invite_url = reverse("game_invite", args=[game.pk, game.invite_token])
    anonymous = Client()
    page = anonymous.get(invite_url).content.decode()
    assert (
        "You will play as a guest, and a game with a guest is never rated: this rated game "
        "will not be."
    ) in page
    links = [href.replace("&amp;", "&") for href in re.findall(r'href="([^"]+)"', page)]
    sign_ins = [href for href in links if href.startswith((reverse("login"), reverse("signup")))]
    assert len(sign_ins) >= 3 and all(href.endswith(f"?next={invite_url}") for href in sign_ins)
    # Every link of the page into the game answers this visitor.
    game_links = [href for href in links if href.startswith(f"/games/{game.pk}/")]
    for href in game_links:
        assert anonymous.get(href).status_code == 200, href
    # Signed in, the visitor is back at the invite, and joins as themselves.
    answer = anonymous.post(
        f"{reverse('login')}?next={invite_url}",
        {"username": "bob-invited", "password": "a-long-passphrase", "next": invite_url},
    )
    assert answer.status_code == 302 and answer["Location"] == invite_url
    page = anonymous.get(invite_url).content.decode()
    assert 'id="join-invite"' in page and "play as a guest" not in page
    assert anonymous.post(invite_url).status_code == 302
    assert game.seats.filter(user=bob).exists()
    # A visitor with no account signs up from the invite, and is back at it too.
    other = invite_game(alice)
    other_url = reverse("game_invite", args=[other.pk, other.invite_token])
    newcomer = Client()
    sign_up = newcomer.get(f"{reverse('signup')}?next={other_url}").content.decode()
    assert f'name="next" value="{other_url}"' in sign_up
    form = {
        "username": "newcomer",
        "password1": "a-long-passphrase",
        "password2": "a-long-passphrase",
    }
    answer = newcomer.post(reverse("signup"), {**form, "next": other_url})
    assert answer.status_code == 302 and answer["Location"] == other_url
    # Never elsewhere than this site.
    away = Client().post(
        reverse("signup"), {**form, "username": "far", "next": "https://evil.example/"}
    )
    assert away.status_code == 302 and away["Location"] == reverse("lobby")


def test_the_invite_token_is_shown_to_its_creator_only() -> None:
    alice, bob = make_player("alice"), make_player("bob")
    game = invite_game(alice, seats=3)
    token = game.invite_token
    game_url = reverse("game", args=[game.pk])
    mine = client_for(alice).get(game_url).content.decode()
    assert token in mine and 'id="invite-link"' in mine
    core.game_join(game_id=game.pk, user=bob, token=token)
    for viewer in (bob, make_player(), None):
        client = client_for(viewer)
        for url in (
            game_url,
            reverse("lobby"),
            reverse("game_record", args=[game.pk]),
            reverse("player", args=["alice"]),
            reverse("archive"),
        ):
            body = client.get(url).content.decode()
            assert token not in body, (viewer, url)
        partial = client.get(game_url, HTTP_HX_REQUEST="true").content.decode()
        assert token not in partial


# --- the pages ----------------------------------------------------------------------------


def test_the_new_game_form_challenges_and_the_lobby_answers() -> None:
    alice, bob = make_player("alice"), make_player("bob")
    client = client_for(alice)
    form = client.get(reverse("game_new", args=["cornmaze"]) + "?challenge=bob").content.decode()
    assert 'name="challenge"' in form and 'value="bob"' in form
    data = {"size": "8", "seats": "2", "clock": "P3D", "seat_1": "person", "challenge": "bob"}
    response = client.post(reverse("game_new", args=["cornmaze"]), data)
    assert response.status_code == 302
    game = Game.objects.get(created_by=alice)
    assert game.seats.get(index=1).reserved_for_id == bob.pk
    lobby = client_for(bob).get(reverse("lobby")).content.decode()
    assert 'id="challenges"' in lobby and reverse("game_accept", args=[game.pk]) in lobby
    response = client_for(bob).post(reverse("game_accept", args=[game.pk]))
    assert response.status_code == 302
    assert Game.objects.get(pk=game.pk).status == Game.Status.ACTIVE


def test_decline_asks_first_and_declines_only_when_confirmed() -> None:
    alice, bob, carol = make_player("alice"), make_player("bob"), make_player("carol")
    game = challenge(alice, "bob")
    url = reverse("game_decline", args=[game.pk])
    as_bob = client_for(bob)
    before = snapshot()
    # The lobby's Decline and a link ask first: a page that says what declining does.
    lobby = as_bob.get(reverse("lobby")).content.decode()
    assert f'<form method="post" action="{url}" class="inline">' in lobby
    for response in (as_bob.get(url), as_bob.post(url), as_bob.post(url, {"confirm": "no"})):
        assert response.status_code == 200
        page = response.content.decode()
        assert "<h1>Decline alice's challenge?</h1>" in page
        assert "Corn maze #" in page and "8×8 board, 3 days per move, rated" in page
        assert "The game is off for everyone: it will not start" in page
        assert 'id="decline-confirm"' in page and 'name="confirm" value="yes"' in page
    # Anyone else is told why not, and is not asked: a GET (a link) goes to the game's page.
    for client, said in (
        (client_for(carol), "This challenge is not for you."),
        (Client(), "Sign in to answer a challenge."),
    ):
        for data in ({}, {"confirm": "yes"}):
            response = client.post(url, data)
            assert response.status_code == 409
            assert said in response.content.decode()
            assert 'id="decline-confirm"' not in response.content.decode()
    response = client_for(carol).get(url)
    assert response.status_code == 302 and response["Location"] == game.get_absolute_url()
    assert as_bob.get(reverse("game_decline", args=[999999])).status_code == 404
    assert snapshot() == before
    # Confirmed: declined, and the challenger's mail is on its way.
    response = as_bob.post(url, {"confirm": "yes"})
    assert response.status_code == 302 and response["Location"] == game.get_absolute_url()
    game.refresh_from_db()
    assert (game.status, game.result_reason) == (Game.Status.ABORTED, "declined")
    assert Outbox.objects.filter(game=game, kind="declined", user=alice).count() == 1
    # Asked again, the answer says it is over instead of asking.
    again = as_bob.post(url)
    assert again.status_code == 409
    assert "This challenge was declined, so it will not start." in again.content.decode()
    assert as_bob.get(url)["Location"] == game.get_absolute_url()


def test_the_game_page_asks_in_the_page_before_declining() -> None:
    """With JavaScript, htmx asks (hx-confirm) and sends only once the player said yes."""
    alice, bob = make_player("alice"), make_player("bob")
    game = challenge(alice, "bob")
    url = reverse("game_decline", args=[game.pk])
    as_bob = client_for(bob)
    page = as_bob.get(game.get_absolute_url()).content.decode()
    (form,) = re.findall(r'<form [^>]*hx-post="' + re.escape(url) + '"[^>]*>', page)
    assert f'action="{url}"' in form and 'hx-confirm="Decline this challenge?' in form
    response = as_bob.post(url, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert "a challenged player said no" in response.content.decode()
    game.refresh_from_db()
    assert game.result_reason == "declined"
    assert Outbox.objects.filter(game=game, kind="declined", user=alice).count() == 1


def asked_page(response: Any, action: str) -> str:
    """The page that asks before `action`, with its form that says yes."""
    assert response.status_code == 200
    page: str = response.content.decode()
    assert f'id="{action}-confirm"' in page and 'name="confirm" value="yes"' in page
    return page


def test_withdraw_asks_first_and_withdraws_only_when_confirmed() -> None:
    alice, bob = make_player("alice"), make_player("bob")
    game = challenge(alice, "bob")
    url = reverse("game_withdraw", args=[game.pk])
    as_alice = client_for(alice)
    before = snapshot()
    # A plain post (the form without JavaScript), a link and a post that is not a yes ask.
    for response in (as_alice.post(url), as_alice.get(url), as_alice.post(url, {"confirm": "no"})):
        page = asked_page(response, "withdraw")
        assert f"<h1>Withdraw Corn maze #{game.pk}?</h1>" in page
        assert "8×8 board, 3 days per move, rated" in page
        assert "The game is off for everyone: it will not start, and nobody has a result." in page
        assert f'<form method="post" action="{url}" class="actions" id="withdraw-confirm">' in page
        assert f'<a href="{game.get_absolute_url()}">Back to the game</a>' in page
    # Anyone else is told why, and is not asked, to a post; a GET goes to the game's page.
    said = "Only the player who made this game can withdraw it."
    for client in (client_for(bob), Client()):
        for data in ({}, {"confirm": "yes"}):
            response = client.post(url, data)
            assert response.status_code == 409
            assert said in response.content.decode()
            assert 'id="withdraw-confirm"' not in response.content.decode()
    response = client_for(bob).get(url)
    assert response.status_code == 302 and response["Location"] == game.get_absolute_url()
    assert as_alice.get(reverse("game_withdraw", args=[999999])).status_code == 404
    assert snapshot() == before
    # Said yes: withdrawn.
    response = as_alice.post(url, {"confirm": "yes"})
    assert response.status_code == 302 and response["Location"] == game.get_absolute_url()
    game.refresh_from_db()
    assert (game.status, game.result_reason) == (Game.Status.ABORTED, "withdrawn")
    # Asked again, the answer says it is over instead of asking.
    before = snapshot()
    again = as_alice.post(url)
    assert again.status_code == 409
    assert "This game was withdrawn by its creator." in again.content.decode()
    assert as_alice.get(url)["Location"] == game.get_absolute_url()
    assert snapshot() == before
    # A game that has started is not withdrawn, nor asked about.
    running = challenge(alice, "bob")
    challenges.challenge_accept(game_id=running.pk, user=bob)
    before = snapshot()
    refused = as_alice.post(reverse("game_withdraw", args=[running.pk]))
    assert refused.status_code == 409 and "cannot be withdrawn" in refused.content.decode()
    assert snapshot() == before


def test_the_game_page_asks_in_the_page_before_withdrawing() -> None:
    """With JavaScript, htmx asks (hx-confirm) and its post is the yes."""
    alice = make_player("alice")
    game = core.game_create(
        kind="cornmaze",
        creator=alice,
        options={"size": 8},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
    )
    url = reverse("game_withdraw", args=[game.pk])
    as_alice = client_for(alice)
    page = as_alice.get(game.get_absolute_url()).content.decode()
    (form,) = re.findall(r'<form [^>]*hx-post="' + re.escape(url) + '"[^>]*>', page)
    assert f'action="{url}"' in form and 'hx-confirm="Withdraw this game?' in form
    response = as_alice.post(url, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert "Withdrawn by its creator before it started." in response.content.decode()
    game.refresh_from_db()
    assert (game.status, game.result_reason) == (Game.Status.ABORTED, "withdrawn")


def test_abort_asks_first_and_aborts_only_when_confirmed(make_cornmaze) -> None:
    game = make_cornmaze()
    player = seat_user(game, 1)
    url = reverse("game_abort", args=[game.pk])
    as_player = client_for(player)
    before = snapshot()
    for response in (as_player.post(url), as_player.get(url), as_player.post(url, {"confirm": ""})):
        page = asked_page(response, "abort")
        assert f"<h1>Abort Corn maze #{game.pk}?</h1>" in page
        assert "The game ends at once, aborted: nobody wins or loses" in page
        assert f'<form method="post" action="{url}" class="actions" id="abort-confirm">' in page
    for client in (client_for(make_player()), Client()):
        response = client.post(url, {"confirm": "yes"})
        assert response.status_code == 409
        assert "You have no seat in this game." in response.content.decode()
    response = client_for(make_player()).get(url)
    assert response.status_code == 302 and response["Location"] == game.get_absolute_url()
    assert snapshot() == before
    response = as_player.post(url, {"confirm": "yes"})
    assert response.status_code == 302 and response["Location"] == game.get_absolute_url()
    game.refresh_from_db()
    assert (game.status, game.result_reason) == (Game.Status.ABORTED, "player_aborted")
    again = as_player.post(url)
    assert again.status_code == 409
    assert "The game is over: there is nothing to abort." in again.content.decode()


def test_too_late_to_abort_is_said_and_not_asked(make_cornmaze) -> None:
    game = make_cornmaze()
    for _ in range(2):
        seat = to_move(game)
        core.move_submit(
            game_id=game.pk,
            user=seat_user(game, seat),
            number=game.ply,
            move={"shifts": a_legal_move(game)},
        )
        game.refresh_from_db()
    url = reverse("game_abort", args=[game.pk])
    as_player = client_for(seat_user(game, 0))
    assert 'id="abort"' not in as_player.get(game.get_absolute_url()).content.decode()
    before = snapshot()
    for data in ({}, {"confirm": "yes"}):
        response = as_player.post(url, data)
        assert response.status_code == 409
        assert "Too late to abort: another player has moved already." in (response.content.decode())
    assert as_player.get(url)["Location"] == game.get_absolute_url()
    assert snapshot() == before


def test_the_game_page_asks_in_the_page_before_aborting(make_cornmaze) -> None:
    game = make_cornmaze()
    url = reverse("game_abort", args=[game.pk])
    as_player = client_for(seat_user(game, 0))
    page = as_player.get(game.get_absolute_url()).content.decode()
    (form,) = re.findall(r'<form [^>]*hx-post="' + re.escape(url) + '"[^>]*>', page)
    assert f'action="{url}"' in form and 'hx-confirm="Abort this game?' in form
    response = as_player.post(url, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert "Aborted by a player before anyone else moved." in response.content.decode()
    game.refresh_from_db()
    assert (game.status, game.result_reason) == (Game.Status.ABORTED, "player_aborted")


@pytest.mark.parametrize(
    ("names", "message"),
    [
        ("alice", "You cannot challenge yourself"),
        ("nobody", "There is no player called nobody"),
        ("simple", "is a bot"),
    ],
)
def test_the_new_game_form_refuses_a_bad_challenge_with_a_sentence(names, message) -> None:
    alice = make_player("alice")
    before = snapshot()
    data = {"size": "8", "seats": "2", "clock": "P3D", "seat_1": "person", "challenge": names}
    response = client_for(alice).post(reverse("game_new", args=["cornmaze"]), data)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert snapshot() == before


def test_the_finished_game_page_shows_the_rematch_offer_to_its_players(make_cornmaze) -> None:
    game = make_cornmaze()
    first, second = seat_user(game, 0), seat_user(game, 1)
    core.game_resign(game_id=game.pk, user=first)
    page = client_for(first).get(reverse("game", args=[game.pk])).content.decode()
    assert 'id="rematch"' in page
    response = client_for(first).post(reverse("game_rematch", args=[game.pk]))
    rematch = Game.objects.get(rematch_of=game)
    assert response.status_code == 302 and response["Location"] == rematch.get_absolute_url()
    # A second click lands on the same offer.
    again = client_for(first).post(reverse("game_rematch", args=[game.pk]))
    assert again.status_code == 302 and again["Location"] == rematch.get_absolute_url()
    assert Game.objects.filter(rematch_of=game).count() == 1
    theirs = client_for(second).get(reverse("game", args=[game.pk])).content.decode()
    assert 'id="accept-rematch"' in theirs and "has not answered yet" in theirs
    assert 'id="rematch"' not in theirs
    # The other player's Rematch, clicked on a page drawn before the offer, accepts it.
    again = client_for(second).post(reverse("game_rematch", args=[game.pk]))
    assert again.status_code == 302 and again["Location"] == rematch.get_absolute_url()
    assert Game.objects.filter(rematch_of=game).count() == 1
    theirs = client_for(second).get(reverse("game", args=[game.pk])).content.decode()
    assert 'id="rematch-link"' in theirs
    assert Game.objects.get(pk=rematch.pk).status == Game.Status.ACTIVE
    assert Move.objects.filter(game=rematch).count() == 0


def test_a_players_finished_game_page_is_not_kept_by_the_browser(make_cornmaze) -> None:
    game = make_cornmaze()
    core.game_resign(game_id=game.pk, user=seat_user(game, 0))
    page = client_for(seat_user(game, 1)).get(reverse("game", args=[game.pk]))
    # The rematch offer on it changes: a player must see it at the next visit.
    assert "no-store" in page["Cache-Control"]
    assert "max-age=60" in Client().get(reverse("game", args=[game.pk]))["Cache-Control"]


def test_challenge_mails_follow_their_own_preference_and_unsubscribe_link() -> None:
    alice, bob, carol = make_player("alice"), make_player("bob"), make_player("carol")
    preferences.preferences_update(
        user=carol, turn_mails="immediate", reminder=True, game_over=True, challenge=False
    )
    game = challenge(alice, "bob", "carol", seats=3)
    (row,) = Outbox.objects.filter(game=game, kind="challenge")
    assert row.user_id == bob.pk
    assert outbox.outbox_send(outbox_id=row.pk) == "sent"
    (message,) = mail.outbox
    unsubscribe = message.extra_headers["List-Unsubscribe"].strip("<>")
    assert Client().post(unsubscribe.removeprefix(django_settings.SITE_URL)).status_code == 200
    prefs = preferences.preferences_for(User.objects.get(pk=bob.pk))
    assert (prefs.challenge, prefs.turn_mails) == (False, "immediate")  # only that kind stops
    # The lobby's "your games" tells the challenger whom the game waits for.
    lobby = client_for(alice).get(reverse("lobby")).content.decode()
    assert "waiting for bob and carol to accept" in lobby


def test_the_game_over_mail_of_an_aborted_game_says_a_player_aborted_it(make_user) -> None:
    alice, bob = make_player("alice"), make_player("bob")
    game = challenge(alice, "bob")
    challenges.challenge_accept(game_id=game.pk, user=bob)
    challenges.game_abort(game_id=game.pk, user=bob)
    rows = Outbox.objects.filter(game=game, kind="game_over")
    assert sorted(rows.values_list("user_id", flat=True)) == sorted([alice.pk, bob.pk])
    for row in rows:
        assert outbox.outbox_send(outbox_id=row.pk) == "sent"
    assert all("Aborted by a player before anyone else moved" in m.body for m in mail.outbox[-2:])
