"""Issue 15.5's leftovers: the lobby's "your games" keeps your finished games below the running
ones (newest first, paged); every player's name links to their page, the Maze Race's runner
strip, results and Ready list and the Robot Maze Race's set-up too; a live race where you are
still in the maze counts in "Your move"."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
import time_machine
from django.test import Client
from django.urls import reverse

from games.archive import selectors
from games.archive.reads import player_url
from games.pages.views import YOUR_FINISHED_PAGE
from games.play import core
from tests.conftest import to_move
from tests.test_archive import T0, bulk_finished
from tests.test_mazerace_site import (
    an_open_way,
    at,
    client_for,
    make_race,
    ready_all,
    run_out,
    step,
    user_of,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("queued")]

HTMX = {"HTTP_HX_REQUEST": "true"}


def finished_ids(html: str) -> list[int]:
    part = html.split('id="your-finished"', 1)[1].split('id="your-finished-games"', 1)[0]
    return [
        int(n)
        for n in re.findall(r'<li class="game-row finished">\s*<a href="/games/(\d+)/"', part)
    ]


def test_finished_games_are_below_the_running_ones_newest_first_and_paged(
    client, make_user, make_cornmaze
):
    me, rival, stranger = make_user("ann"), make_user("bob"), make_user("cy")
    running = make_cornmaze()
    running.seats.filter(index=0).update(user=me)
    games = bulk_finished(YOUR_FINISHED_PAGE + 3, [me, rival], winner=1)  # newest first
    bulk_finished(2, [rival, stranger], at=T0 + timedelta(days=1))  # not mine, newer
    client.force_login(me)

    page = client.get(reverse("lobby")).content.decode()
    assert page.index(f'href="/games/{running.pk}/"') < page.index('id="your-finished"')
    assert finished_ids(page) == [g.pk for g in games[:YOUR_FINISHED_PAGE]]
    row = page.split(f'<li class="game-row finished">\n  <a href="/games/{games[0].pk}/"')[1]
    row = row.split("</li>")[0]
    assert f'<a href="{player_url("ann")}">ann</a>' in row
    assert f'<a href="{player_url("bob")}">bob</a>' in row
    assert "you came 2nd" in row
    assert f'href="/games/{games[0].pk}/replay/"' in row
    assert 'id="your-finished-newest"' not in page and 'id="your-finished-newer"' not in page

    older = re.search(r'href="(\?page=1&amp;done_after=[0-9.]+)#your-finished" rel="next"', page)
    assert older
    page2 = client.get(reverse("lobby") + older[1].replace("&amp;", "&")).content.decode()
    assert finished_ids(page2) == [g.pk for g in games[YOUR_FINISHED_PAGE:]]
    assert 'id="your-finished-older"' not in page2 and 'id="your-finished-newest"' in page2
    # The running games stay on top, and the poll keeps the finished games' place.
    assert f'href="/games/{running.pk}/"' in page2
    cursor = older[1].split("done_after=")[1]
    assert f"part=your-games&amp;done_after={cursor}" in page2
    poll = client.get(
        reverse("lobby") + f"?page=1&part=your-games&done_after={cursor}", **HTMX
    ).content.decode()
    assert finished_ids(poll) == [g.pk for g in games[YOUR_FINISHED_PAGE:]]

    newer = re.search(r'href="(\?page=1&amp;done_before=[0-9.]+)#your-finished" rel="prev"', page2)
    assert newer
    back = client.get(reverse("lobby") + newer[1].replace("&amp;", "&")).content.decode()
    assert finished_ids(back) == [g.pk for g in games[:YOUR_FINISHED_PAGE]]


def test_no_finished_game_yet_and_a_bad_cursor(client, make_user):
    me = make_user()
    client.force_login(me)
    page = client.get(reverse("lobby")).content.decode()
    assert "No finished game yet." in page
    for bad in ("x", "²", "1.", "9" * 30 + ".1", "-5.3"):
        response = client.get(reverse("lobby"), {"done_after": bad, "done_before": bad})
        assert response.status_code == 200
        assert "No finished game yet." in response.content.decode()


def test_a_visitor_signed_out_sees_no_finished_list(client, make_user):
    bulk_finished(2, [make_user("ann"), make_user("bob")])
    page = client.get(reverse("lobby")).content.decode()
    assert 'id="your-finished"' not in page


# --- a live race in "Your move" ----------------------------------------------------------------


def test_a_live_race_counts_in_your_move_while_you_are_in_the_maze(make_cornmaze):
    with time_machine.travel(T0, tick=False):
        game = make_race(2)
    ann, bob = user_of(game, 0), user_of(game, 1)
    # Waiting for Ready: the race waits for you.
    assert selectors.your_move_count(ann) == selectors.your_move_count(bob) == 1
    with time_machine.travel(T0, tick=False):
        ready_all(game)
    with at(game, 0):
        assert selectors.your_move_count(ann) == 1
        html = client_for(ann).get(reverse("lobby")).content.decode()
        assert "Your move: 1</a>" in html and '<title id="page-title">(1) Lobby' in html
    # A Corn maze where it is ann's move as well: two.
    corn = make_cornmaze()
    corn.seats.filter(index=to_move(corn)).update(user=ann)
    with at(game, 0):
        assert selectors.your_move_count(ann) == 2
    # Ann resigns: out of the race, no more her move there; bob is still in.
    with at(game, 100):
        core.game_resign(game_id=game.pk, user=ann)
        assert selectors.your_move_count(ann) == 1
        assert selectors.your_move_count(bob) == 1
    run_out(game, 1, 500)
    game.refresh_from_db()
    assert game.is_over
    assert selectors.your_move_count(bob) == 0


def test_your_move_count_costs_one_query_without_a_live_race(
    make_user, make_cornmaze, django_assert_num_queries
):
    me = make_user()
    for _ in range(3):
        game = make_cornmaze()
        game.seats.filter(deadline__isnull=False).update(user=me)
    with django_assert_num_queries(1):
        assert selectors.your_move_count(me) == 3


# --- every name a link -------------------------------------------------------------------------


def test_the_runner_strip_results_and_ready_list_link_every_runner():
    with time_machine.travel(T0, tick=False):
        game = make_race(2, bots=("wall",))
    ann, bob = user_of(game, 0), user_of(game, 1)
    ann_link = f'<a href="{player_url(ann.get_username())}">{ann.get_username()}</a>'
    bob_link = f'<a href="{player_url(bob.get_username())}">{bob.get_username()}</a>'
    url = f"/games/{game.pk}/"
    with time_machine.travel(T0, tick=False):
        page = client_for(ann).get(url).content.decode()
    ready = page.split('id="ready-list"')[1].split("</ul>")[0]
    assert ann_link in ready and bob_link in ready and "Bot (wall)" in ready
    assert "<a" not in ready.split("Bot (wall)")[0].rsplit("<li>", 1)[1]

    with time_machine.travel(T0, tick=False):
        ready_all(game)
    with at(game, 0):
        step(game, 0, an_open_way(game, 0))
        strip = Client().get(url).content.decode().split('id="strip"')[1]
        strip = strip.split("</ol>")[0]
    assert ann_link in strip and bob_link in strip


def test_a_finished_races_results_link_every_runner():
    with time_machine.travel(T0, tick=False):
        game = make_race(2)
        ready_all(game)
    ann, bob = user_of(game, 0), user_of(game, 1)
    with at(game, 100):
        core.game_resign(game_id=game.pk, user=ann)
    run_out(game, 1, 500)
    game.refresh_from_db()
    assert game.is_over
    results = Client().get(f"/games/{game.pk}/").content.decode()
    results = results.split('id="results"')[1].split("</table>")[0]
    for user in (ann, bob):
        name = user.get_username()
        assert f'<a href="{player_url(name)}">{name}</a>' in results


def test_the_robot_maze_race_set_up_links_both_players(make_user):
    ann, bob = make_user("ann"), make_user("bob")
    game = core.game_create(
        kind="robotmaze",
        creator=ann,
        options={},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
    )
    core.game_join(game_id=game.pk, user=bob)
    page = Client().get(f"/games/{game.pk}/").content.decode()
    for name in ("ann", "bob"):
        assert f'<a href="{player_url(name)}">{name}</a> is setting up' in page


def test_archive_rows_and_the_player_page_link_every_player(client, make_user):
    bulk_finished(1, [make_user("ann"), make_user("bob"), "simple"])
    for url in (reverse("archive"), reverse("player", args=["ann"])):
        page = client.get(url).content.decode()
        for name in ("ann", "bob"):
            assert f'<a href="{player_url(name)}">{name}</a>' in page
