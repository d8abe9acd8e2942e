"""The game page's move log, kept in the cache per game, seed, ply and viewer's seat
(games/pages/contexts.py), and the poll that reads no user: what a viewer sees is what a page
drawn afresh shows that viewer, never another's, and never a move later than the game's ply as
the page read it."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils.html import escape

from games import clock
from games.archive import selectors
from games.models import ChatMessage, Game
from games.pages import contexts
from games.ui import wording
from tests.conftest import _delete_cache_keys, play_to_the_end, seat_user, to_move
from tests.test_query_counts import (
    HTMX,
    client_for,
    cornmaze_form,
    post_move,
    robotmaze_joined,
)
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


def seats_spectator_and_anybody(game: Game, make_user: Any) -> dict[object, Client]:
    """A client for each seat, a signed-in spectator (None) and an anonymous one."""
    return {
        0: client_for(seat_user(game, 0)),
        1: client_for(seat_user(game, 1)),
        None: client_for(make_user()),
        "anybody": Client(),
    }


def test_each_viewer_gets_its_own_page_warm_or_cold_and_never_the_other_warehouse(
    robot_game, make_user
) -> None:
    game = robot_game
    viewers = seats_spectator_and_anybody(game, make_user)
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


def test_the_keys_differ_by_viewer_end_and_game(make_cornmaze) -> None:
    game = make_cornmaze()
    # Every viewer of a Corn maze sees every move alike: one log for them all.
    assert len({contexts._log_key(game, viewer) for viewer in (0, 1, None)}) == 1
    # A Robot Maze Race shows a warehouse to its owner alone: a log for each viewer.
    race = Game(
        pk=game.pk, kind="robotmaze", ply=game.ply, seed_sha256=game.seed_sha256, status=game.status
    )
    assert len({contexts._log_key(race, viewer) for viewer in (0, 1, None)}) == 3
    other = make_cornmaze()
    assert contexts._log_key(other, 0) != contexts._log_key(game, 0)
    game.status = Game.Status.FINISHED
    assert contexts._log_key(game, 0) != contexts._log_key(
        Game(pk=game.pk, kind=game.kind, ply=game.ply, seed_sha256=game.seed_sha256), 0
    )


def log_items(body: str) -> str:
    found = re.search(r"<ol>\s*(.*?)\s*</ol>", log_of(body), re.S)
    assert found is not None
    return found.group(1)


def drawn_afresh(game: Game, user: Any, monkeypatch: Any) -> str:
    """The log of the game's page for this user, drawn without the cache."""
    with monkeypatch.context() as m:
        m.setattr(contexts, "cache", DeadCache())
        return str(contexts.game_context(Game.objects.get(pk=game.pk), user)["log"])


def kept_log(game: Game, user: Any) -> str:
    return str(contexts.game_context(Game.objects.get(pk=game.pk), user)["log"])


def test_a_kept_log_grows_by_the_moves_since_the_same_as_one_drawn_afresh(
    make_cornmaze, make_user, monkeypatch
) -> None:
    """A log kept at an earlier ply is extended by the moves since (the mover's answer by the
    move it played, any other look by a read of the plies since): line for line the log drawn
    afresh, gifts of time (a clock event: the log drawn whole again) included."""
    from games.play import core

    game = make_cornmaze(seats=3)
    spectator = make_user()
    viewers = [seat_user(game, s) for s in range(3)] + [spectator]
    for step in range(7):
        mover, form = cornmaze_form(game)
        client = client_for(mover)
        if step % 3:  # the mover's own log kept a ply (or several) before
            client.get(reverse("game", args=[game.pk]))
        response = client.post(reverse("game_move", args=[game.pk]), form, **HTMX)
        assert response.status_code == 200
        answer = CSRF.sub(r"\1", response.content.decode())
        assert log_items(answer) == drawn_afresh(game, mover, monkeypatch), step
        if step == 3:
            game.refresh_from_db()
            giver = (to_move(game) + 1) % 3
            core.time_give(game_id=game.pk, user=seat_user(game, giver), seat_index=to_move(game))
        for n, viewer in enumerate(viewers):
            if step % (n + 1) == 0:  # some look at each ply, some now and then
                assert kept_log(game, viewer) == drawn_afresh(game, viewer, monkeypatch), (step, n)
        game.refresh_from_db()
    assert kept_log(game, spectator).count("<li") == 8  # seven moves and a clock event


def test_a_robot_maze_race_kept_log_grows_per_seat_never_showing_another_warehouse(
    robot_game, make_user, monkeypatch
) -> None:
    viewers = {0: seat_user(robot_game, 0), 1: seat_user(robot_game, 1), None: make_user()}
    for viewer in viewers.values():
        kept_log(robot_game, viewer)  # kept at this ply
    play(robot_game, "RRRD", 2)
    play(robot_game, "DRRR", 2)
    robot_game.refresh_from_db()
    for seat, viewer in viewers.items():
        grown = kept_log(robot_game, viewer)
        assert grown == drawn_afresh(robot_game, viewer, monkeypatch), seat
        for other in (0, 1):
            if other != seat:
                assert "".join(WAREHOUSES[other]) not in grown


def test_a_robot_maze_race_move_answer_grows_the_other_seats_logs_so_the_next_reads_no_moves(
    make_user, monkeypatch
) -> None:
    """Moves one after the other with no look between (a move POST only): each answer's log
    grows the other seat's and the spectators' logs by its move, each as that viewer sees it,
    so that the next mover's answer reads no moves; every log is the one drawn afresh and none
    shows the other seat's warehouse."""
    from tests.test_query_counts import robotmaze_form, robotmaze_game

    game = robotmaze_game(make_user)
    spectator = make_user()
    kept_log(game, spectator)  # a spectator's log kept at this ply
    for step in range(6):
        mover, form = robotmaze_form(game)
        client = client_for(mover)
        with CaptureQueriesContext(connection) as captured:
            response = client.post(reverse("game_move", args=[game.pk]), form, **HTMX)
        assert response.status_code == 200
        answer = CSRF.sub(r"\1", response.content.decode())
        assert log_items(answer) == drawn_afresh(game, mover, monkeypatch), step
        if step >= 2:  # both seats' logs kept by their own answers
            assert not [q for q in captured if "games_move" in q["sql"].split("FROM")[-1]], step
        game.refresh_from_db()
        # Every viewer's kept log is at this ply now (the mover's from its answer, the others'
        # grown by it), as drawn afresh; looked at in the cache, not drawn, so as not to keep.
        seats = {s.index: s.user for s in game.seats.all()}
        for seat, viewer in (*seats.items(), (None, spectator)):
            if seat is not None and seat != mover_seat(game, mover) and step == 0:
                continue  # the other seat has not moved yet: nothing of its own kept
            key = contexts._log_key(game, seat)
            kept = contexts._logs_kept(game, [key])[key]
            assert kept.ply == game.ply, (step, seat)
            assert kept.html == drawn_afresh(game, viewer, monkeypatch), (step, seat)
            for other in (0, 1):
                if other != seat:
                    assert "".join(WAREHOUSES[other]) not in kept.html


def mover_seat(game: Game, user: Any) -> int:
    return next(s.index for s in game.seats.all() if s.user_id == user.pk)


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

    set = get_many = set_many = get


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
    assert sql == [selectors.GAME_VERSION_SQL.replace("%s", str(game.pk))], sql


# --- the game's partial, kept per version and viewer (games/pages/game_cache.py) ---------------


def fresh(client: Client, game: Game, **headers: str) -> str:
    """The page or partial drawn afresh for this viewer: nothing kept for the game."""
    _delete_cache_keys(settings.GAME_LOG_CACHE_PREFIX)
    return page(client, game, **headers)


def kept_same_as_drawn_afresh(clients: dict[str, Client], game: Game) -> dict[str, str]:
    """Each viewer's page, as kept: the same as drawn afresh for it alone, and kept again, a
    page for each."""
    warm = {role: page(client, game) for role, client in clients.items()}
    for role, client in clients.items():
        assert warm[role] == fresh(client, game), role
    for role, client in clients.items():  # kept again, each its own
        assert page(client, game) == warm[role], role
    assert kept_keys("page:") == len(clients)
    return warm


def kept_keys(what: str = "partial:") -> int:
    """How many game partials (or, "page:", full pages around them) are kept."""
    import redis
    from django.core.cache import cache

    raw = redis.Redis.from_url(settings.CACHES["default"]["LOCATION"])
    pattern = cache.make_key(settings.GAME_LOG_CACHE_PREFIX + what) + "*"
    return len(list(raw.scan_iter(match=pattern)))


def every_viewer_gets_its_own(viewers: dict[object, Client], game: Game) -> None:
    """Each viewer's page and partial, drawn afresh and then from what the others' looks
    kept, in an order where each meets the others' first: always its own."""
    for headers in ({}, HTMX):
        cold = {role: fresh(client, game, **headers) for role, client in viewers.items()}
        for role in list(viewers)[::-1] + list(viewers):
            assert page(viewers[role], game, **headers) == cold[role], (role, headers)
        # The test means something: the players' pages differ from each other's.
        assert cold[0] != cold[1]
    assert kept_keys() > 0


def test_a_robot_maze_race_partial_is_kept_per_seat_never_another_warehouse(
    robot_game, make_user
) -> None:
    game = robot_game
    viewers = seats_spectator_and_anybody(game, make_user)
    with time_machine.travel(clock.now(), tick=False):
        every_viewer_gets_its_own(viewers, game)
        for role, client in viewers.items():
            body = page(client, game, **HTMX)
            for other in (0, 1):
                if other != role:
                    assert "".join(WAREHOUSES[other]) not in body, (role, other)


def test_a_slow_maze_race_partial_is_kept_per_runner(make_user) -> None:
    from tests.test_mazerace_site import an_open_way, make_race, step

    game = make_race(2, clock="P3D")
    step(game, 0, an_open_way(game, 0))
    step(game, 1, an_open_way(game, 1))
    step(game, 1, an_open_way(game, 1))
    game.refresh_from_db()
    assert game.status == Game.Status.ACTIVE
    viewers = seats_spectator_and_anybody(game, make_user)
    with time_machine.travel(clock.now(), tick=False):
        every_viewer_gets_its_own(viewers, game)


def test_one_player_in_two_browsers_shares_a_kept_partial_each_with_its_own_csrf_token(
    make_cornmaze, make_user
) -> None:
    from django.middleware.csrf import _unmask_cipher_token

    game = make_cornmaze()
    user = seat_user(game, to_move(game))
    home, phone = client_for(user), client_for(user)
    url = reverse("game", args=[game.pk])
    for client in (home, phone, home):
        body = client.get(url, **HTMX).content.decode()
        tokens = set(re.findall(r'name="csrfmiddlewaretoken" value="([^"]+)"', body))
        assert tokens, body[:300]
        secret = client.cookies[settings.CSRF_COOKIE_NAME].value
        assert {_unmask_cipher_token(t) for t in tokens} == {secret}
    assert kept_keys() == 1
    # Signed in or not, a visitor who is no player gets a partial kept apart.
    client_for(make_user()).get(url, **HTMX)
    Client().get(url, **HTMX)
    assert kept_keys() == 3


def test_the_time_left_is_of_each_look_not_of_the_kept_partial(make_cornmaze) -> None:
    game = make_cornmaze()
    client = client_for(seat_user(game, 1))
    now = clock.now()
    with time_machine.travel(now, tick=False):
        first = page(client, game, **HTMX)
    with time_machine.travel(now + timedelta(seconds=5), tick=False):
        later = page(client, game, **HTMX)
    assert kept_keys() == 1
    lefts = re.findall(r'<span class="left">([^<]+)</span>', first)
    assert lefts and lefts != re.findall(r'<span class="left">([^<]+)</span>', later)
    assert "2 days, 23:59:55" in later or "2 days, 23:59:5" in later


def test_a_move_a_gift_of_time_and_a_vacation_show_at_once(make_cornmaze, make_user) -> None:
    from games.play import core, vacations

    game = make_cornmaze()
    spectator = client_for(make_user())
    players = {s: client_for(seat_user(game, s)) for s in (0, 1)}
    looks = [spectator, *players.values()]
    before = [page(c, game) for c in looks]
    post_move(game, cornmaze_form)
    after = [page(c, game) for c in looks]
    for old, new in zip(before, after, strict=True):
        assert log_of(new).count("<li") == log_of(old).count("<li") + 1
    # A gift of time (no ply: the log's clock event, the seat's new deadline).
    game.refresh_from_db()
    giver = 1 - to_move(game)
    core.time_give(game_id=game.pk, user=seat_user(game, giver), seat_index=to_move(game))
    for client, old in zip(looks, after, strict=True):
        assert (
            log_of(page(client, game)).count("clock-event") == log_of(old).count("clock-event") + 1
        )
    # A vacation of the player to move.
    assert "on vacation until" not in page(spectator, game)
    vacations.vacation_start(
        user=seat_user(game, to_move(game)), until=clock.now() + timedelta(days=3)
    )
    for client in looks:
        assert "on vacation until" in page(client, game, **HTMX)


def test_a_chat_message_shows_on_a_page_whose_partial_is_kept(make_cornmaze, make_user) -> None:
    from games.chat import service as chat

    game = make_cornmaze()
    client = client_for(seat_user(game, 0))
    page(client, game)
    assert kept_keys() == 1
    chat.chat_post(game_id=game.pk, user=seat_user(game, 1), text="a word between players")
    assert "a word between players" in page(client, game)


def test_a_finished_games_page_is_kept_and_shows_the_rematch_offer_and_its_answer(
    make_cornmaze, make_user
) -> None:
    """A finished game's page is kept for each viewer, and what changes without a move of its
    own shows at once: the rematch offer (it moves the game's version) and the answer to it
    (which moves the rematch's). A kept look costs what a game in progress's does; a
    spectator's browser may keep the page a minute, a player's never."""
    from games.play import challenges
    from tests.test_query_counts import KEPT_PAGE, queries

    game = play_to_the_end(make_cornmaze())
    assert game.status == Game.Status.FINISHED
    p0, p1 = seat_user(game, 0), seat_user(game, 1)
    clients = {"p0": client_for(p0), "p1": client_for(p1), "watcher": client_for(make_user())}
    clients["anybody"] = Client()
    with time_machine.travel(clock.now(), tick=False):
        seen = kept_same_as_drawn_afresh(clients, game)
        for role in ("p0", "p1"):
            assert 'id="rematch"' in seen[role] and "rematch_until=" in seen[role]
        # The page around the partial knows the game is over: both chats are open to all.
        for role, body in seen.items():
            assert "now that the game is over" in body and "over=1" in body, role
        for role in ("watcher", "anybody"):
            assert 'id="rematch"' not in seen[role] and "hx-get" not in seen[role].split("</h1>")[0]
        url = reverse("game", args=[game.pk])
        for role, client in clients.items():
            count, response = queries(lambda c=client: c.get(url))
            assert count == KEPT_PAGE["anonymous" if role == "anybody" else "player"], role
            player = role in {"p0", "p1"}
            stored = "private, no-store" if player else "private, max-age=60"
            assert response["Cache-Control"] == stored, role
        rematch = challenges.rematch_offer(game_id=game.pk, user=p0)
        seen = kept_same_as_drawn_afresh(clients, game)
        assert 'id="accept-rematch"' in seen["p1"] and "You are in" in seen["p0"]
        challenges.challenge_accept(game_id=rematch.pk, user=p1)
        seen = kept_same_as_drawn_afresh(clients, game)
        for role in ("p0", "p1"):
            assert 'id="rematch-link"' in seen[role] and 'id="accept-rematch"' not in seen[role]


def test_an_error_is_drawn_for_its_request_alone(make_cornmaze) -> None:
    game = make_cornmaze()
    client = client_for(seat_user(game, 0))
    response = client.post(reverse("game_give_time", args=[game.pk]), {}, **HTMX)
    assert response.status_code == 409
    assert 'id="error"' in response.content.decode()
    assert kept_keys() == 0
    assert 'id="error"' not in page(client, game, **HTMX)
    assert kept_keys() == 1


def test_a_draft_is_drawn_for_its_request_alone(make_user) -> None:
    """A Robot Maze Race player's warehouse being set up (the session's draft) is shown at once
    and not kept; the partial kept before it was drafted is not served instead."""
    game = robotmaze_joined(make_user)
    client = client_for(seat_user(game, 0))
    assert "0 of 20 crates" in page(client, game, **HTMX)
    assert kept_keys() == 1
    client.post(reverse("game_draft", args=[game.pk]), {"action": "random"}, **HTMX)
    assert "20 of 20 crates" in page(client, game, **HTMX)
    assert "20 of 20 crates" in page(client, game)
    assert kept_keys() == 1


def test_without_the_cache_the_game_page_is_drawn_for_each_look(make_cornmaze) -> None:
    """Redis at a closed port (a real address where nobody listens): the session from the
    database, the partial drawn afresh, the page the same as with the cache."""
    from tests.test_sessions import closed_port

    game = make_cornmaze()
    post_move(game, cornmaze_form)
    client = client_for(seat_user(game, 0))
    with time_machine.travel(clock.now(), tick=False):
        drawn = fresh(client, game)
        down = {
            **settings.CACHES,
            "default": {
                **settings.CACHES["default"],
                "LOCATION": f"redis://127.0.0.1:{closed_port()}/0",
                "OPTIONS": {"socket_timeout": 1, "socket_connect_timeout": 1},
            },
        }
        with override_settings(CACHES=down):
            for headers in ({}, HTMX):
                response = client.get(reverse("game", args=[game.pk]), **headers)
                assert response.status_code == 200
            assert CSRF.sub(r"\1", response.content.decode()) in drawn
            assert page(client, game) == drawn


def test_the_keys_facts_are_the_same_by_the_orm_as_by_postgresqls_statement(
    make_cornmaze, make_user
) -> None:
    """make run's SQLite reads the key's facts through the ORM (game_cache._facts_rows_orm):
    the same rows, value for value, as PostgreSQL's statement, with a vacation, a time bank,
    a bot, an open game and a finished one with its rematch; and with a player's "Your move:
    N" counts, those of its own read."""
    from games.archive import selectors
    from games.pages import game_cache
    from games.play import challenges, core, vacations

    game = make_cornmaze()
    post_move(game, cornmaze_form)
    game.refresh_from_db()
    # Someone wrote in its chat (the facts say so: the page reads the chat only then).
    ChatMessage.objects.create(
        game=game, author=seat_user(game, 0), channel="players", text="hi", created_at=clock.now()
    )
    vacations.vacation_start(
        user=seat_user(game, to_move(game)), until=clock.now() + timedelta(days=3)
    )
    banked = core.game_create(
        kind="cornmaze",
        creator=make_user(),
        options={},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan(bot="strong")],
        clock_options={"bank_days": 7},
    )
    open_game = core.game_create(
        kind="cornmaze",
        creator=make_user(),
        options={},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
    )
    # A finished game: the move that ended it gives the facts that its read gives, then a
    # rematch is offered (the facts name it).
    finished = play_to_the_end(make_cornmaze())
    written = Game.objects.get(pk=finished.pk)
    core.seats_read(written)
    now = clock.now()
    for user in (seat_user(finished, 0), make_user(), AnonymousUser()):
        from_move = game_cache.page_facts(finished.pk, user, now, game=written)
        assert from_move is not None and from_move.key
        assert from_move == game_cache.page_facts(finished.pk, user, now)
    rematch = challenges.rematch_offer(game_id=finished.pk, user=seat_user(finished, 0))
    assert {r[19] for r in game_cache._facts_rows(finished.pk)} == {
        f"{rematch.pk}:{rematch.version}:{rematch.status}"
    }
    for each in (game, banked, open_game, finished):
        rows = game_cache._facts_rows(each.pk)
        assert rows and rows == game_cache._facts_rows_orm(each.pk), each.pk
        assert game_cache.page_facts(each.pk, AnonymousUser(), clock.now()).chat_written is (
            each == game
        )
        # With a viewer's "Your move: N" counts: the same rows, and the counts its own read gives.
        for seat in each.seats.all():
            if seat.user is None:
                continue
            with_counts = game_cache._facts_rows(each.pk, seat.user_id)
            assert [r[:-2] for r in with_counts] == rows
            counts = {r[-2:] for r in with_counts}
            assert len(counts) == 1
            ((clocks, live),) = counts
            assert selectors.your_move_count(seat.user, (clocks, live)) == (
                selectors.your_move_count(seat.user)
            )
    assert game_cache._facts_rows(10**9) == game_cache._facts_rows_orm(10**9) == []


def test_a_new_name_shows_at_once_on_a_kept_partial(make_cornmaze, make_user) -> None:
    """A guest who signs up takes a new name, and its player page with it, without a move: the
    partial kept with the old name is not served."""
    from django.contrib.auth.models import User

    game = make_cornmaze()
    spectator = client_for(make_user())
    player = seat_user(game, 0)
    assert f"/players/{player.username}/" in page(spectator, game, **HTMX)
    User.objects.filter(pk=player.pk).update(username="renamed-player")
    body = page(spectator, game, **HTMX)
    assert "/players/renamed-player/" in body and f"/players/{player.username}/" not in body


def test_the_page_around_a_kept_partial_is_kept_per_viewer_each_with_its_own_chat_and_header(
    make_cornmaze, make_user
) -> None:
    """The full page (header, chat) around a kept partial is kept too: after each change that
    adds no move (a message in either chat, a mute, another game's turn, a notice to show),
    every viewer's kept page is the one drawn afresh for it, and a player never reads the
    spectators' chat before the end."""
    from games.chat import service as chat

    game = make_cornmaze()
    p0, p1, watcher = seat_user(game, 0), seat_user(game, 1), make_user()
    clients = {"p0": client_for(p0), "p1": client_for(p1), "watcher": client_for(watcher)}
    clients["anybody"] = Client()

    with time_machine.travel(clock.now(), tick=False):
        kept_same_as_drawn_afresh(clients, game)
        chat.chat_post(game_id=game.pk, user=watcher, text="a word from the stands")
        seen = kept_same_as_drawn_afresh(clients, game)
        for role in ("p0", "p1"):
            assert "a word from the stands" not in seen[role]
        assert all("a word from the stands" in seen[role] for role in ("watcher", "anybody"))
        message = chat.chat_post(game_id=game.pk, user=p1, text="a word between players")
        seen = kept_same_as_drawn_afresh(clients, game)
        assert all("a word between players" in body for body in seen.values())
        chat.chat_mute(game_id=game.pk, user=p0, message_id=message.pk)
        seen = kept_same_as_drawn_afresh(clients, game)
        assert "a word between players" not in seen["p0"] and "You muted" in seen["p0"]
        assert "a word between players" in seen["watcher"]
        # Another game comes to p0's move: "Your move: N" in p0's header and title.
        before = seen["p0"]
        other = make_cornmaze()
        seat = other.seats.get(index=to_move(other))
        seat.user = p0
        seat.save(update_fields=["user"])
        seen = kept_same_as_drawn_afresh(clients, game)
        assert seen["p0"] != before and "Your move: " in seen["p0"]
        # A notice (django.contrib.messages) shows once, on a page drawn for it.
        response = clients["watcher"].post(
            reverse("game_chat_report", args=[game.pk]), {"message": message.pk}
        )
        assert response.status_code == 302
        assert escape(wording.CHAT_REPORTED) in page(clients["watcher"], game)
        assert escape(wording.CHAT_REPORTED) not in page(clients["watcher"], game)
        kept_same_as_drawn_afresh(clients, game)


@pytest.mark.parametrize("kind", ["cornmaze", "robotmaze"])
def test_the_movers_answer_is_kept_for_its_next_look_the_same_as_drawn_afresh(
    kind, make_user, make_cornmaze
) -> None:
    """The move's answer is drawn from the game and seats the move wrote, and kept under the
    key those give: the key a read of the database gives (one look more costs no drawing), and
    the mover's next look, page or partial, is the page drawn afresh."""
    from games.pages import game_cache
    from games.play import core
    from tests.test_query_counts import KEPT_PAGE, KEPT_PARTIAL, game_and_form, queries

    game, form_of = game_and_form(kind, make_user, make_cornmaze)
    spectator = make_user()
    for _ in range(2):
        mover, form = form_of(game)
        client = client_for(mover)
        client.get(reverse("game", args=[game.pk]))  # the session and the CSRF cookie
        _delete_cache_keys(settings.GAME_LOG_CACHE_PREFIX)
        with time_machine.travel(clock.now(), tick=False):
            response = client.post(reverse("game_move", args=[game.pk]), form, **HTMX)
            assert response.status_code == 200
            assert kept_keys() == 1
            now = clock.now()
            written = Game.objects.get(pk=game.pk)
            core.seats_read(written)
            for user in (*(s.user for s in written.seats.all()), spectator):
                facts = game_cache.page_facts(game.pk, user, now)
                assert facts is not None
                assert game_cache.page_facts(game.pk, user, now, game=written) == facts
            url = reverse("game", args=[game.pk])
            count, partial = queries(lambda c=client, u=url: c.get(u, **HTMX))
            assert count == KEPT_PARTIAL["player"]
            assert CSRF.sub(r"\1", partial.content.decode()) == CSRF.sub(
                r"\1", response.content.decode()
            )
            warm = page(client, game)
            assert queries(lambda c=client, u=url: c.get(u))[0] == KEPT_PAGE["player"]
            _delete_cache_keys(settings.GAME_LOG_CACHE_PREFIX)
            assert page(client, game) == warm
            assert page(client, game, **HTMX) == CSRF.sub(r"\1", partial.content.decode())
        game.refresh_from_db()


def test_every_look_at_a_game_page_marks_it_watched(make_cornmaze, make_user) -> None:
    """The page writes the player's watching mark (no "your turn" mail meanwhile) with its read
    of the kept page: a look drawn afresh, a kept one, the htmx partial, the poll and an
    open game's page each mark it."""
    from django.core.cache import cache

    from games.mail import watching
    from games.play import core

    game = make_cornmaze()
    player = seat_user(game, to_move(game))
    client = client_for(player)
    key = watching._watching_key(game.pk, player.pk)
    version = Game.objects.get(pk=game.pk).version
    looks: list[tuple[str, dict[str, Any]]] = [
        ("", {}),  # drawn afresh
        ("", {}),  # kept
        ("", HTMX),
        (f"?since={version}", HTMX),
    ]
    for query, headers in looks:
        cache.delete(key)
        response = client.get(reverse("game", args=[game.pk]) + query, **headers)
        assert response.status_code in (200, 204)
        assert watching.watching_until(game_id=game.pk, user_id=player.pk) is not None, query
    open_game = core.game_create(
        kind="cornmaze",
        creator=player,
        options={},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
    )
    cache.delete(watching._watching_key(open_game.pk, player.pk))
    page(client, open_game)
    assert watching.watching_until(game_id=open_game.pk, user_id=player.pk) is not None
