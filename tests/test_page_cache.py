"""The game page's move log, kept in the cache per game, seed, ply and viewer's seat
(games/pages/contexts.py), and the poll that reads no user: what a viewer sees is what a page
drawn afresh shows that viewer, never another's, and never a move later than the game's ply as
the page read it."""

from __future__ import annotations

import re

import pytest
import time_machine
from django.conf import settings
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from games import clock
from games.models import Game
from games.pages import contexts
from tests.conftest import _delete_cache_keys, seat_user
from tests.test_query_counts import HTMX, client_for, cornmaze_form, post_move
from tests.test_robotmaze_site import WAREHOUSES, play, set_up

pytestmark = pytest.mark.django_db

# A CSRF token is masked anew for every response: what differs between two looks at a page.
CSRF = re.compile(r'(name="csrfmiddlewaretoken" value="|"X-CSRFToken": ")[^"]+"')


def page(client: Client, game: Game, **headers: str) -> str:
    response = client.get(reverse("game", args=[game.pk]), **headers)
    assert response.status_code == 200
    return CSRF.sub(r"\1", response.content.decode())


def log_of(body: str) -> str:
    found = re.search(r'<section class="log" id="log">(.*?)</section>', body, re.S)
    assert found is not None
    return found.group(1)


@pytest.fixture
def robot_game(make_user) -> Game:
    from games.play import core

    game = core.game_create(
        kind="robotmaze",
        creator=make_user("alice"),
        options={},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
    )
    core.game_join(game_id=game.pk, user=make_user("bob"))
    set_up(game)
    play(game, "RRRR", 4)
    play(game, "DDDR", 3)
    game.refresh_from_db()
    return game


def test_each_viewer_gets_its_own_page_warm_or_cold_and_never_the_other_warehouse(
    robot_game, make_user
) -> None:
    game = robot_game
    viewers = {
        0: client_for(seat_user(game, 0)),
        1: client_for(seat_user(game, 1)),
        None: client_for(make_user()),
        "anybody": Client(),
    }
    # The clocks' "time left" is drawn at each look: the same instant for every look here.
    with time_machine.travel(clock.now(), tick=False):
        looks(viewers, game)


def looks(viewers: dict[object, Client], game: Game) -> None:
    cold = {}
    for role, client in viewers.items():
        _delete_cache_keys(settings.GAME_LOG_CACHE_PREFIX)
        cold[role] = page(client, game)
    # Now every viewer's log is kept: each one, in an order that meets the others' first.
    for role in [1, "anybody", 0, None, 1, 0]:
        for headers in ({}, HTMX):
            body = page(viewers[role], game, **headers)
            assert log_of(body) == log_of(cold[role]), role
            if not headers:
                assert body == cold[role], role
            for other in (0, 1):
                if other == role:
                    continue
                assert "".join(WAREHOUSES[other]) not in body, (role, other)
                for row in set(WAREHOUSES[other]) - {"." * 10}:
                    assert row not in body, (role, other, row)


def test_the_keys_differ_by_viewer_ply_end_and_game(make_cornmaze) -> None:
    game = make_cornmaze()
    keys = {contexts._log_key(game, viewer) for viewer in (0, 1, None)}
    assert len(keys) == 3
    other = make_cornmaze()
    assert contexts._log_key(other, 0) != contexts._log_key(game, 0)
    before = contexts._log_key(game, 0)
    game.ply += 1
    assert contexts._log_key(game, 0) != before
    game.status = Game.Status.FINISHED
    assert contexts._log_key(game, 0) != contexts._log_key(
        Game(pk=game.pk, ply=game.ply, seed_sha256=game.seed_sha256), 0
    )


def test_a_move_made_after_the_page_read_its_game_is_not_in_the_kept_log(make_cornmaze) -> None:
    game = make_cornmaze()
    post_move(game, cornmaze_form)
    stale = Game.objects.get(pk=game.pk)  # read at ply 1...
    post_move(game, cornmaze_form)  # ...and a move is made before its log is drawn
    has_moves, log, _ = contexts._log(stale, None, [])
    assert has_moves and log.count("<li") == 1
    # The log kept for ply 1 is that one move; the game's ply 2 has its own.
    again, kept, _ = contexts._log(Game.objects.get(pk=game.pk), None, [])
    assert kept.count("<li") == 2
    assert contexts._log(stale, None, [])[1].count("<li") == 1


class DeadCache:
    """A cache whose server does not answer."""

    def get(self, *args: object, **kwargs: object) -> object:
        raise ConnectionError("no answer")

    set = get


def test_a_cache_that_does_not_answer_costs_a_query_not_the_page(
    make_cornmaze, monkeypatch
) -> None:
    game = make_cornmaze()
    post_move(game, cornmaze_form)
    monkeypatch.setattr(contexts, "cache", DeadCache())
    has_moves, log, _ = contexts._log(Game.objects.get(pk=game.pk), None, [])
    assert has_moves and log.count("<li") == 1
    body = page(client_for(seat_user(game, 0)), game)
    assert log_of(body).count("<li") == 1


def test_the_poll_with_nothing_new_reads_the_version_only(make_cornmaze) -> None:
    """The session comes from the cache (games/accounts/sessions.py), the user is not read."""
    game = make_cornmaze()
    client = client_for(seat_user(game, 0))
    client.get(reverse("game", args=[game.pk]))
    version = Game.objects.get(pk=game.pk).version
    url = reverse("game", args=[game.pk]) + f"?since={version}"
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, **HTMX)
    assert response.status_code == 204
    sql = [q["sql"] for q in captured.captured_queries]
    assert len(sql) == 1, sql
    assert '"games_game"."version"' in sql[0]
