"""Issue 15.5's leftovers: the lobby's "your games" keeps your finished games below the running
ones (newest first, paged); every player's name links to their page."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse

from games.archive.reads import player_url
from games.pages.views import YOUR_FINISHED_PAGE
from tests.test_archive import T0, bulk_finished

pytestmark = pytest.mark.django_db

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
