"""The words and small pieces of the pages (issue 16): the lobby's clocks, how a game ended,
who is waited for, one time format, the favicon, Resign without JavaScript, the links."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from django.urls import reverse

from games.models import Game
from games.play import core
from games.ui import time_html, time_text
from games.ui.wording import clock_words
from tests.conftest import a_legal_move, seat_user, to_move

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_one_time_format_written_in_utc_for_the_page_to_show_in_the_viewers_zone():
    at = datetime(2025, 4, 3, 15, 31, 12, tzinfo=UTC)
    assert time_text(at) == "Thu 3 Apr 2025, 15:31 UTC"
    assert time_text(at + timedelta(hours=9)) == "Fri 4 Apr 2025, 00:31 UTC"
    assert str(time_html(at)) == (
        '<time datetime="2025-04-03T15:31:12+00:00" title="Thu 3 Apr 2025, 15:31 UTC">'
        "Thu 3 Apr 2025, 15:31 UTC</time>"
    )


def test_the_game_page_replay_and_archive_write_times_alike(make_cornmaze, client):
    game = make_cornmaze()
    page = client.get(reverse("game", args=[game.pk])).content.decode()
    pattern = r'<time datetime="[^"]+" title="(\w{3} \d+ \w{3} \d{4}, \d\d:\d\d UTC)">\1</time>'
    assert re.search(pattern, page)
    core.game_resign(game_id=game.pk, user=seat_user(game, 0))
    for url in (reverse("game_replay", args=[game.pk]), reverse("archive")):
        assert re.search(pattern, client.get(url).content.decode()), url


def test_the_clock_in_words():
    assert clock_words("cornmaze", timedelta(days=3)) == "3 days per move"
    assert clock_words("robotmaze", timedelta(days=30)) == "30 days per move"
    assert clock_words("mazerace", timedelta(days=3)) == "slow race: 3 days to get out"
    assert clock_words("mazerace", None) == "live race"


@pytest.mark.parametrize("reason", ["resign", "timeout"])
def test_a_two_player_game_names_who_resigned_or_ran_out_of_time(make_cornmaze, client, reason):
    game = make_cornmaze()
    # One move first: a game timed out before any move is aborted, with no result.
    core.move_submit(
        game_id=game.pk,
        user=seat_user(game, to_move(game)),
        number=0,
        move={"shifts": a_legal_move(game)},
    )
    loser = seat_user(game, to_move(game))
    if reason == "resign":
        core.game_resign(game_id=game.pk, user=loser)
    else:
        game.seats.filter(user=loser).update(deadline="2000-01-01T00:00Z")
        core.seat_timeout(game_id=game.pk, seat_index=to_move(game))
    page = client.get(reverse("game", args=[game.pk])).content.decode()
    said = "resigned" if reason == "resign" else "ran out of time"
    assert f"({loser.get_username()} {said})" in page
    assert "the others" not in page


def test_the_lobby_waits_for_the_other_player_or_the_others(make_cornmaze):
    two, three = make_cornmaze(), make_cornmaze(seats=3)
    for game, words in ((two, "waiting for the other player"), (three, "waiting for the others")):
        mover = to_move(game)
        waiting = seat_user(game, (mover + 1) % game.seats.count())
        page = client_for(waiting).get("/").content.decode()
        row = page.split(f'href="/games/{game.pk}/"')[1].split("</li>")[0]
        assert words in row or "waiting for the other players" in row, row


@pytest.mark.parametrize("reason", ["resign", "timeout"])
def test_your_games_says_you_are_out_of_a_corn_maze_that_goes_on_without_you(make_cornmaze, reason):
    game = make_cornmaze(seats=3)
    core.move_submit(
        game_id=game.pk,
        user=seat_user(game, to_move(game)),
        number=0,
        move={"shifts": a_legal_move(game)},
    )
    out = to_move(game)
    if reason == "resign":
        core.game_resign(game_id=game.pk, user=seat_user(game, out))
    else:
        game.seats.filter(index=out).update(deadline="2000-01-01T00:00Z")
        core.seat_timeout(game_id=game.pk, seat_index=out)
    game.refresh_from_db()
    assert game.status == Game.Status.ACTIVE
    page = client_for(seat_user(game, out)).get("/").content.decode()
    row = page.split(f'href="/games/{game.pk}/"')[1].split("</li>")[0]
    assert '<span class="state">you are out · the others play on</span>' in row, row
    # One other player left: the one waited for is named.
    still_in = seat_user(game, next(i for i in range(3) if i not in (out, to_move(game))))
    page = client_for(still_in).get("/").content.decode()
    row = page.split(f'href="/games/{game.pk}/"')[1].split("</li>")[0]
    named = seat_user(game, to_move(game)).get_username()
    assert f'<span class="state">waiting for {named}</span>' in row, row


def test_your_games_waits_for_the_other_players_while_several_are_left(make_cornmaze):
    game = make_cornmaze(seats=4)
    core.move_submit(
        game_id=game.pk,
        user=seat_user(game, to_move(game)),
        number=0,
        move={"shifts": a_legal_move(game)},
    )
    out = to_move(game)
    core.game_resign(game_id=game.pk, user=seat_user(game, out))
    game.refresh_from_db()
    assert game.status == Game.Status.ACTIVE
    waiting = next(i for i in range(4) if i not in (out, to_move(game)))
    page = client_for(seat_user(game, waiting)).get("/").content.decode()
    row = page.split(f'href="/games/{game.pk}/"')[1].split("</li>")[0]
    assert '<span class="state">waiting for the other players</span>' in row, row


def test_favicon_ico_is_the_sites_icon(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"].endswith("/img/favicon.svg")


def test_resign_without_javascript_asks_first(make_cornmaze):
    game = make_cornmaze()
    player = client_for(seat_user(game, 0))
    url = reverse("game_resign", args=[game.pk])
    for asked in (player.get(url), player.post(url)):
        assert asked.status_code == 200
        page = asked.content.decode()
        assert "Resign Corn maze" in page and "You lose the game:" in page
        assert 'name="confirm" value="yes"' in page
    game.refresh_from_db()
    assert game.status == Game.Status.ACTIVE  # asking changed nothing

    # Somebody without a seat is told so, and nothing changes either.
    refused = Client().post(url, {"confirm": "yes"})
    assert refused.status_code == 409

    response = player.post(url, {"confirm": "yes"})
    assert response.status_code == 302
    game.refresh_from_db()
    assert game.status == Game.Status.FINISHED and game.result_reason == "resign"


def test_resign_through_htmx_is_asked_in_the_page(make_cornmaze):
    game = make_cornmaze(seats=3)
    page = client_for(seat_user(game, 0)).get(reverse("game", args=[game.pk])).content.decode()
    assert 'hx-confirm="Resign this game?"' in page
    client_for(seat_user(game, 1)).post(reverse("game_resign", args=[game.pk]), **HTMX)
    game.refresh_from_db()
    assert 1 in game.state["dropped"]
    # With one other player left in the game, resigning ends it (the page used to say the
    # others play on, counting the one who had resigned).
    asked = client_for(seat_user(game, 2)).get(reverse("game_resign", args=[game.pk]))
    winner = game.seats.get(index=0).name
    assert f"You lose the game: {winner} wins." in asked.content.decode()
    four = make_cornmaze(seats=4)
    client_for(seat_user(four, 1)).post(reverse("game_resign", args=[four.pk]), **HTMX)
    asked = client_for(seat_user(four, 2)).get(reverse("game_resign", args=[four.pk]))
    assert "You leave the game: your marker leaves the board" in asked.content.decode()


def test_resign_refused_says_why_when_asked_and_when_confirmed(make_cornmaze, make_user):
    """The page that asks and the resignation itself refuse alike, each with its reason (the
    page used to say "You have no seat in a game in progress here." to a player of a game
    that was over, or who had left it)."""
    game = make_cornmaze(seats=3)
    url = reverse("game_resign", args=[game.pk])
    resigned = client_for(seat_user(game, 1))
    assert resigned.post(url, **HTMX).status_code == 200
    stranger = client_for(make_user())
    for client, reason in (
        (resigned, "You are out of this game already."),
        (stranger, "You have no seat in this game."),
    ):
        for response in (client.get(url), client.post(url, {"confirm": "yes"})):
            assert response.status_code == 409
            assert reason in response.content.decode()
    client_for(seat_user(game, 2)).post(url, **HTMX)
    game.refresh_from_db()
    assert game.status == Game.Status.FINISHED
    for response in (resigned.get(url), client_for(seat_user(game, 0)).get(url)):
        assert response.status_code == 409 and "The game is over." in response.content.decode()
    assert game.moves.count() == 2


def test_the_account_page_links_the_email_settings(make_user):
    page = client_for(make_user()).get(reverse("account")).content.decode()
    assert f'href="{reverse("email_settings")}"' in page


def test_a_missing_page_is_the_sites_own(client):
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    page = response.content.decode()
    assert "There is nothing here" in page and 'aria-label="Site"' in page
    missing_game = client.get(reverse("game", args=[999_999])).content.decode()
    assert "No such game." in missing_game


def test_a_page_without_javascript_is_told_to_reload_for_a_bots_move(make_cornmaze):
    """Such a page does not poll: while a bot is to move it says to reload (in <noscript>,
    which a page with JavaScript, updated by its poll, does not show)."""
    with core.bot_tasks_paused():
        # The first of these fixed seeds with the bot to move first.
        games = (
            make_cornmaze(bots=["simple"], seed=hashlib.sha256(b"%d" % i).digest())
            for i in range(20)
        )
        game = next(g for g in games if to_move(g) == 1)
    person = client_for(seat_user(game, 0))
    said = "<noscript> Reload the page in a moment for the bot's move.</noscript>"
    assert said in person.get(reverse("game", args=[game.pk])).content.decode()
    core.bot_turn_play(game_id=game.pk, ply=game.ply)
    game.refresh_from_db()
    assert to_move(game) == 0
    assert said not in person.get(reverse("game", args=[game.pk])).content.decode()
