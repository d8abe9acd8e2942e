"""Player pages, guests' too: games running and finished with the archive's filters, results per
game, the current streak, the Atom feed, and a fixed number of queries."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import timedelta
from io import StringIO

import pytest
import time_machine
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.management import call_command
from django.utils import timezone

from games.accounts.guests import guest_create
from games.archive import reads
from games.models import Game, PlayerResult, Seat
from games.play import core
from tests.conftest import a_legal_move, seat_user, to_move
from tests.test_archive import ATOM, HTMX, T0, bulk_finished, ids, newest_first, play_out

pytestmark = pytest.mark.django_db


@pytest.fixture
def ann(make_user):
    return make_user("ann")


def summary(user: AbstractBaseUser) -> reads.Summary:
    player = reads.player_named(user.get_username())
    assert player is not None
    return player.summary


def test_results_per_game_and_the_streak(client, ann, make_user):
    bob = make_user("bob")
    day = timedelta(days=1)
    # Oldest first: won 2 Corn mazes, lost 1 on time, then lost 1 Robot Maze Race, then won 3.
    bulk_finished(2, [ann, bob], winner=0, at=T0 - 5 * day)
    bulk_finished(1, [ann, bob], winner=1, reason="timeout", timed_out=0, at=T0 - 4 * day)
    bulk_finished(1, [bob, ann], kind="robotmaze", reason="damage", winner=0, at=T0 - 3 * day)
    bulk_finished(3, [ann, bob, "simple"], winner=0, at=T0 - 2 * day)
    # Aborted games have no result and do not count; bob's time-outs are not ann's.
    bulk_finished(2, [ann, bob], status="aborted", winner=None, at=T0)
    bulk_finished(1, [ann, bob], winner=0, reason="timeout", timed_out=1, at=T0 - 6 * day)

    anns = summary(ann)
    results = {r.kind: r for r in anns.results}
    assert results["cornmaze"] == reads.Results("cornmaze", "Corn maze", 7, 6, 1, 1)
    assert results["robotmaze"] == reads.Results("robotmaze", "Robot Maze Race", 1, 0, 1, 0)
    assert anns.streak == reads.Streak(won=True, length=3)
    assert str(anns.streak) == "3 wins"
    assert summary(bob).streak == reads.Streak(won=False, length=3)

    page = client.get("/players/ann/").content.decode()
    assert "{#" not in page and "{%" not in page and "{{" not in page
    row = page.split('data-kind="cornmaze"')[1].split("</tr>")[0]
    assert re.findall(r'class="num [a-z-]+">(\d+)<', row) == ["7", "6", "1", "1"]
    assert "Current streak: <strong>3 wins</strong> in a row." in page


def test_a_streak_runs_over_every_finished_game_and_changes_with_the_next(ann, make_user):
    bob = make_user("bob")
    assert summary(ann) == reads.Summary(results=[], streak=None)
    bulk_finished(1, [ann, bob], winner=1, at=T0 - timedelta(days=1))
    assert summary(ann).streak == reads.Streak(won=False, length=1)
    assert str(summary(ann).streak) == "1 loss"
    # Equal finish times: the id settles which game came last.
    bulk_finished(4, [ann, bob], winner=1, at=T0, step=timedelta(0))
    assert summary(ann).streak == reads.Streak(won=False, length=5)
    bulk_finished(1, [ann, bob], winner=0, at=T0)
    assert summary(ann).streak == reads.Streak(won=True, length=1)
    # Aborted games have no result and break no streak.
    bulk_finished(2, [ann, bob], status="aborted", winner=None, at=T0 + timedelta(1))
    assert summary(ann).streak == reads.Streak(won=True, length=1)


def test_in_a_game_of_more_than_two_only_the_moves_say_who_ran_out_of_time(ann, make_user):
    bob, cat = make_user("bob"), make_user("cat")
    # Ann ran out of time and was dropped; the game went on and Bob got out.
    bulk_finished(1, [ann, bob, cat], winner=1, reason="exit", timed_out=0)
    # The game ended on time, but it was Bob who ran out; Ann had resigned before.
    bulk_finished(1, [ann, bob, cat], winner=2, reason="timeout", timed_out=1, at=T0 - timedelta(1))
    (ann_results,) = summary(ann).results
    (bob_results,) = summary(bob).results
    (cat_results,) = summary(cat).results
    assert (ann_results.lost, ann_results.timed_out) == (2, 1)
    assert (bob_results.won, bob_results.lost, bob_results.timed_out) == (1, 1, 1)
    assert (cat_results.won, cat_results.lost, cat_results.timed_out) == (1, 1, 0)


def test_a_real_time_out_counts(make_cornmaze):
    game = make_cornmaze(seats=2, size=6)
    mover = to_move(game)
    core.move_submit(
        game_id=game.pk, user=seat_user(game, mover), number=0, move={"shifts": a_legal_move(game)}
    )
    with time_machine.travel(timezone.now() + timedelta(days=4)):
        core.seat_timeout(game_id=game.pk, seat_index=1 - mover)
    game.refresh_from_db()
    assert game.status == Game.Status.FINISHED
    late = seat_user(game, 1 - mover)
    (results,) = summary(late).results
    assert (results.played, results.won, results.lost, results.timed_out) == (1, 0, 1, 1)
    (results,) = summary(seat_user(game, mover)).results
    assert (results.won, results.timed_out) == (1, 0)


def test_the_results_kept_as_games_end_are_the_results_counted_again(make_cornmaze):
    """Every way a game ends, through services.game_end: the counts kept match a recount from
    the games, and every seat carries its game's finish time."""
    for _ in range(2):
        play_out(make_cornmaze())  # won by reaching the exit
    # A time-out in a game of two ends it; in a game of three the seat is dropped, play goes on.
    pair, trio = make_cornmaze(seats=2, size=6), make_cornmaze(seats=3, size=6)
    for game in [pair, trio]:
        mover = to_move(game)
        core.move_submit(
            game_id=game.pk,
            user=seat_user(game, mover),
            number=0,
            move={"shifts": a_legal_move(game)},
        )
        with time_machine.travel(timezone.now() + timedelta(days=4)):
            core.seat_timeout(game_id=game.pk, seat_index=to_move(game))
    play_out(trio)
    # A game with no move yet is aborted when its first seat runs out: no result.
    aborted = make_cornmaze()
    with time_machine.travel(timezone.now() + timedelta(days=4)):
        core.seat_timeout(game_id=aborted.pk, seat_index=to_move(aborted))
    for game in [pair, trio]:
        game.refresh_from_db()
        assert game.status == Game.Status.FINISHED
    aborted.refresh_from_db()
    assert aborted.status == Game.Status.ABORTED

    def counts() -> list[tuple]:
        return sorted(
            PlayerResult.objects.values_list("user", "kind", "played", "won", "lost", "timed_out")
        )

    kept = counts()
    assert sum(row[5] for row in kept) == 2  # one seat timed out in each
    PlayerResult.objects.update(played=0, won=0)
    out = StringIO()
    call_command("results_recount", stdout=out)
    assert counts() == kept
    assert out.getvalue() == f"{len(kept)} results counted.\n"
    for seat in Seat.objects.select_related("game"):
        assert seat.finished_at == seat.game.finished_at is not None


def test_a_guest_has_a_page_with_running_and_finished_games(client, make_cornmaze, make_user):
    guest = guest_create()
    assert " " in guest.username
    running = make_cornmaze()
    running.seats.filter(index=0).update(user=guest)
    done = play_out(make_cornmaze())
    done.seats.filter(index=1).update(user=guest)
    other = bulk_finished(3, [make_user(), make_user()])
    url = f"/players/{guest.username.replace(' ', '%20')}/"
    response = client.get(url)
    assert response.status_code == 200
    page = response.content.decode()
    assert f'<h1>{guest.username} <span class="badge">guest</span></h1>' in page
    active = page.split('id="active-games"')[1].split("</section>")[0]
    assert f'href="/games/{running.pk}/"' in active
    assert ids(response) == [done.pk]
    assert all(g.pk not in ids(response) for g in other)
    assert client.get("/players/nobody/").status_code == 404


def test_the_player_page_filters_and_pages_like_the_archive(client, ann, make_user):
    bob, cat = make_user("bob"), make_user("cat")
    won = bulk_finished(30, [ann, bob], winner=0)
    lost = bulk_finished(5, [cat, ann], winner=0, kind="robotmaze", at=T0 - timedelta(days=1))
    bulk_finished(5, [bob, cat])
    assert ids(client.get("/players/ann/?result=lost")) == newest_first(lost)
    assert ids(client.get("/players/ann/?game=robotmaze")) == newest_first(lost)
    assert ids(client.get("/players/ann/?player=bob&game=robotmaze")) == newest_first(lost)
    page = client.get("/players/ann/").content.decode()
    assert 'name="player"' not in page.split('<form id="filters"')[1].split("</form>")[0]
    older = re.search(r'href="([^"]+)"[^>]*rel="next"', page)
    assert older is not None
    url = older.group(1).replace("&amp;", "&")
    assert url.startswith("/players/ann/?after=") and "player=" not in url
    second = client.get(url, **HTMX)
    assert ids(second) == newest_first(won + lost)[25:]
    assert "<html" not in second.content.decode() and 'id="active-games"' not in (
        second.content.decode()
    )


@pytest.mark.parametrize("url", ["/players/ann/", "/players/ann/?game=cornmaze&bots=no&result=won"])
def test_the_player_page_runs_a_fixed_number_of_queries(
    client, ann, make_user, make_cornmaze, django_assert_num_queries, url
):
    bob = make_user("bob")
    for _ in range(2):
        game = make_cornmaze()
        game.seats.filter(index=0).update(user=ann)
    bulk_finished(10, [ann, bob])
    # The player with results and streak; finished and running games with their seats; the
    # ratings with their history (the full page only).
    with django_assert_num_queries(3):
        small = client.get(url)
    assert len(ids(small)) == 10
    bulk_finished(500, [ann, bob], winner=0, at=T0 - timedelta(days=3))
    bulk_finished(488, [bob, ann, "simple"], at=T0 - timedelta(days=4))
    assert Game.objects.count() == 1000
    with django_assert_num_queries(3):
        big = client.get(url)
    assert len(ids(big)) == reads.PAGE_SIZE
    older = re.search(r'href="([^"]+)"[^>]*rel="next"', big.content.decode())
    assert older is not None
    # A later page: the player, the games with their seats.
    with django_assert_num_queries(2):
        client.get(older.group(1).replace("&amp;", "&"), **HTMX)


def test_the_player_feed_is_atom_with_their_finished_games(client, make_user):
    guest = guest_create()
    mine = bulk_finished(3, [guest, make_user()])
    bulk_finished(2, [make_user(), make_user()])
    response = client.get(f"/players/{guest.username.replace(' ', '%20')}/feed/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/atom+xml")
    feed = ET.fromstring(response.content)
    assert feed.tag == f"{ATOM}feed"
    assert guest.username in feed.find(f"{ATOM}title").text
    entries = feed.findall(f"{ATOM}entry")
    links = [e.find(f"{ATOM}link").get("href") for e in entries]
    assert [int(re.search(r"/games/(\d+)/", h).group(1)) for h in links] == newest_first(mine)
    for entry in entries:
        for name in ["id", "title", "updated", "summary"]:
            assert entry.find(f"{ATOM}{name}") is not None
    assert client.get("/players/nobody/feed/").status_code == 404


def test_a_player_is_found_by_their_name_in_any_case(client, make_user):
    """Names are one whatever their case (models.UsernameKey): the player page, their feed and
    the archive's filter find the player by another case, and send the browser on to the
    name as it is written."""
    zoe = make_user("Zoë")
    bulk_finished(2, [zoe, make_user()])
    for asked, kept in (("/players/ZO%C3%8B/", "/players/Zo%C3%AB/"), ("/players/zoë/", None)):
        response = client.get(asked + "?game=cornmaze")
        assert response.status_code == 301
        assert response["Location"] == (kept or "/players/Zo%C3%AB/") + "?game=cornmaze"
    feed = client.get("/players/ZO%C3%8B/feed/")
    assert feed.status_code == 301 and feed["Location"] == "/players/Zo%C3%AB/feed/"
    archive = client.get("/archive/", {"player": "ZOË", "game": "cornmaze"})
    assert archive.status_code == 302
    assert archive["Location"] == "/archive/?player=Zo%C3%AB&game=cornmaze"
    assert client.get(archive["Location"]).status_code == 200
    assert client.get("/players/nobody/").status_code == 404
    assert "There is no player named" in client.get("/archive/?player=nobody").content.decode()


def self_links(feed: ET.Element) -> list[str | None]:
    return [link.get("href") for link in feed.findall(f"{ATOM}link") if link.get("rel") == "self"]


def test_a_players_feed_keeps_the_filters_of_their_page(client, make_user):
    ann, bob = make_user("ann-feed"), make_user("bob-feed")
    corn = bulk_finished(2, [ann, bob], kind="cornmaze")
    bulk_finished(2, [ann, bob], kind="robotmaze")
    page = client.get("/players/ann-feed/?game=cornmaze").content.decode()
    assert 'href="/players/ann-feed/feed/?game=cornmaze"' in page
    feed = ET.fromstring(client.get("/players/ann-feed/feed/?game=cornmaze").content)
    links = [e.find(f"{ATOM}link").get("href") for e in feed.findall(f"{ATOM}entry")]
    assert [int(re.search(r"/games/(\d+)/", h).group(1)) for h in links] == newest_first(corn)
    selves = [link.get("href") for link in feed.findall(f"{ATOM}link") if link.get("rel") == "self"]
    assert selves == ["http://testserver/players/ann-feed/feed/?game=cornmaze"]
    archive = ET.fromstring(client.get("/archive/feed/?game=cornmaze").content)
    selves = [
        link.get("href") for link in archive.findall(f"{ATOM}link") if link.get("rel") == "self"
    ]
    assert selves == ["http://testserver/archive/feed/?game=cornmaze"]
    moved = client.get("/players/ANN-FEED/feed/?game=cornmaze")
    assert moved.status_code == 301 and moved["Location"] == "/players/ann-feed/feed/?game=cornmaze"
