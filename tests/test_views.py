from __future__ import annotations

import json
import re
import time

import pytest
import time_machine
from django.core.cache import cache
from django.urls import reverse

from games.models import Game, Move
from games.play import core
from games.web import health
from tests.conftest import a_legal_move, seat_user, to_move

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def letters(shifts):
    return [chr(ord("a") + c) for c in shifts]


def test_lobby_lists_open_and_running_games_with_clocks(client, make_cornmaze, make_user):
    running = make_cornmaze()
    waiting = core.game_create(
        kind="cornmaze",
        creator=make_user("waiter"),
        options={},
        clock_choice="P30D",
        seats=[core.SeatPlan(), core.SeatPlan()],
    )
    page = client.get("/").content.decode()
    assert f'href="/games/{running.pk}/"' in page and "Watch" in page
    assert "3 days per move" in page and "30 days per move" in page
    assert "0:00:00" not in page  # a clock, not a countdown
    assert reverse("game_join", args=[waiting.pk]) in page
    assert "waiter" in page


def test_your_games_put_your_move_first(client, make_cornmaze):
    games = [make_cornmaze() for _ in range(3)]
    # One player sits in all three: in the second it is their move, in the third it is not,
    # whoever the seed drew to move first.
    me = seat_user(games[0], 0)
    my_seat = {games[0].pk: 0, games[1].pk: to_move(games[1]), games[2].pk: 1 - to_move(games[2])}
    for g in games[1:]:
        g.seats.filter(index=my_seat[g.pk]).update(user=me)
    client.force_login(me)
    page = client.get("/").content.decode()
    section = page.split('id="your-games"')[1].split("</section>")[0]
    ids = [g.pk for g in games]
    mine_first = [g.pk for g in games if to_move(g) == my_seat[g.pk]]
    assert games[1].pk in mine_first and games[2].pk not in mine_first
    order = sorted(ids, key=lambda pk: section.index(f"/games/{pk}/"))
    assert order[: len(mine_first)] == sorted(mine_first, key=order.index)
    assert section.count("your move") == len(mine_first)
    # Time left in whole seconds, as on the game page.
    assert len(re.findall(r"your move · \d+ days?, \d+:\d\d:\d\d left<", section)) == len(
        mine_first
    )


def test_create_a_game_as_a_guest_then_join_from_another_browser(client, django_user_model):
    response = client.post(
        "/new/cornmaze/", {"size": "9", "seats": "2", "clock": "P30D", "seat_1": "person"}
    )
    game = Game.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/games/{game.pk}/"
    creator = game.seats.get(index=0).user
    assert creator.username.startswith("Guest ") and creator.profile.is_guest
    assert game.status == Game.Status.OPEN and game.options == {"size": 9}

    other = client.__class__()
    page = other.get(f"/games/{game.pk}/").content.decode()
    assert "Join this game" in page
    other.post(reverse("game_join", args=[game.pk]))
    game.refresh_from_db()
    assert game.status == Game.Status.ACTIVE
    assert django_user_model.objects.filter(username__startswith="Guest ").count() == 2


def test_a_bad_new_game_form_says_why_and_creates_nothing(client):
    response = client.post("/new/cornmaze/", {"size": "20", "seats": "9", "clock": "P1D"})
    assert response.status_code == 400
    page = response.content.decode()
    assert "less than or equal to 12" in page and "less than or equal to 6" in page
    assert Game.objects.count() == 0
    assert client.get("/new/chess/").status_code == 404


def test_game_with_a_bot_starts_at_once(client):
    client.post("/new/cornmaze/", {"size": "8", "seats": "2", "clock": "P3D", "seat_1": "strong"})
    game = Game.objects.get()
    assert game.status == Game.Status.ACTIVE
    assert game.seats.get(index=1).bot == "strong"


@time_machine.travel("2026-11-29 12:00Z", tick=False)
def test_game_page_shows_board_clocks_log_and_sha(client, make_cornmaze):
    game = make_cornmaze()
    seat = to_move(game)
    client.force_login(seat_user(game, seat))
    page = client.get(f"/games/{game.pk}/").content.decode()
    assert 'id="board"' in page and 'class="marker"' in page
    assert "Your turn" in page and 'id="move-form"' in page
    assert 'Clock: <span class="left">3 days, 0:00:00</span>' in page
    assert game.seed_sha256 in page
    assert game.seed_hex not in page
    assert reverse("rules", args=["cornmaze"]) in page
    for col in "abcdefgh":
        assert f'value="{col}"' in page


def test_a_move_by_form_post_works_without_javascript(client, make_cornmaze):
    game = make_cornmaze()
    seat = to_move(game)
    client.force_login(seat_user(game, seat))
    shifts = a_legal_move(game)
    first, second = letters(shifts)
    response = client.post(
        reverse("game_move", args=[game.pk]), {"ply": "0", "first": first, "second": second}
    )
    assert response.status_code == 302 and response["Location"] == f"/games/{game.pk}/"
    move = Move.objects.get(game=game)
    assert move.move == {"shifts": shifts}
    page = client.get(f"/games/{game.pk}/").content.decode()
    assert f"{first} {second}" in page  # the log, in notation
    assert 'class="path"' in page  # the path of the last turn is drawn


def test_a_move_by_htmx_returns_the_game_partial(client, make_cornmaze):
    game = make_cornmaze()
    seat = to_move(game)
    client.force_login(seat_user(game, seat))
    first, second = letters(a_legal_move(game))
    response = client.post(
        reverse("game_move", args=[game.pk]),
        {"ply": "0", "first": first, "second": second},
        **HTMX,
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<section id="game"') and "<html" not in body
    assert 'id="board"' in body and 'id="log"' in body and 'id="clocks"' in body


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"ply": "0", "first": "z", "second": "a"}, "Choose a column from a to h"),
        ({"ply": "x", "first": "a", "second": "a"}, "cannot be read"),
        ({"ply": "0", "first": "a"}, "Choose a column for the second shift"),
        ({"first": "a", "second": "b"}, "cannot be read"),
        ({"ply": "5", "first": "a", "second": "a"}, "earlier position"),
        # A stale form is refused as such before what it holds is read.
        ({"ply": "5", "first": "z"}, "earlier position"),
    ],
)
def test_malformed_or_stale_moves_get_a_message_and_change_nothing(
    client, make_cornmaze, data, message
):
    game = make_cornmaze()
    client.force_login(seat_user(game, to_move(game)))
    for extra in ({}, HTMX):
        response = client.post(reverse("game_move", args=[game.pk]), data, **extra)
        assert response.status_code == 409
        assert message in response.content.decode()
    assert not Move.objects.exists()


def test_not_your_turn_and_spectators_cannot_move(client, make_cornmaze, make_user):
    game = make_cornmaze()
    waiting = seat_user(game, 1 - to_move(game))
    client.force_login(waiting)
    page = client.get(f"/games/{game.pk}/").content.decode()
    assert 'id="move-form"' not in page and "to move" in page
    response = client.post(
        reverse("game_move", args=[game.pk]), {"ply": "0", "first": "a", "second": "a"}
    )
    assert response.status_code == 409 and "not your turn" in response.content.decode()
    client.force_login(make_user())
    response = client.post(
        reverse("game_move", args=[game.pk]), {"ply": "0", "first": "a", "second": "a"}
    )
    assert "no seat" in response.content.decode()
    assert not Move.objects.exists()


def test_polling_is_cheap_when_nothing_changed(client, make_cornmaze, django_assert_num_queries):
    game = make_cornmaze()
    url = f"/games/{game.pk}/?since={game.version}"
    with django_assert_num_queries(1):
        response = client.get(url, **HTMX)
    assert response.status_code == 204
    core.move_submit(
        game_id=game.pk,
        user=seat_user(game, to_move(game)),
        number=0,
        move={"shifts": a_legal_move(game)},
    )
    response = client.get(url, **HTMX)
    assert response.status_code == 200 and 'id="board"' in response.content.decode()


def test_polling_stops_when_the_game_is_over(client, make_cornmaze):
    game = make_cornmaze()
    core.game_resign(game_id=game.pk, user=seat_user(game, 0))
    game.refresh_from_db()
    response = client.get(f"/games/{game.pk}/?since={game.version}", **HTMX)
    assert response.status_code == 286
    page = client.get(f"/games/{game.pk}/").content.decode()
    assert "hx-trigger" not in page.split('id="game"')[1].split(">")[0]
    assert game.seed_hex in page  # the seed is public once the game is over


def test_record_json_follows_the_format(client, make_cornmaze):
    game = make_cornmaze()
    core.move_submit(
        game_id=game.pk,
        user=seat_user(game, to_move(game)),
        number=0,
        move={"shifts": a_legal_move(game)},
    )
    response = client.get(f"/games/{game.pk}/record.json")
    assert response["Content-Type"] == "application/json"
    record = json.loads(response.content)
    assert list(record) == [
        "format",
        "game",
        "id",
        "url",
        "options",
        "seed_sha256",
        "seed",
        "players",
        "first_seat",
        "initial",
        "moves",
        "clock_events",
        "result",
    ]
    assert record["format"] == "mazesite-record/1" and record["game"] == "cornmaze"
    assert record["seed"] is None and record["seed_sha256"] == game.seed_sha256
    assert record["options"] == {"size": 8, "clock": "P3D"}
    assert record["result"] == {"status": "active", "reason": "", "places": []}
    (move,) = record["moves"]
    assert set(move) == {"ply", "seat", "at", "move", "outcome"}
    assert set(record["initial"]) == {"arrows", "markers"}
    assert len(record["initial"]["arrows"]) == 8
    assert record["players"][0]["bot"] is None


def test_rules_page_and_healthz(client):
    page = client.get("/rules/cornmaze/").content.decode()
    assert "SHA-256" in page and "counter" in page and "visited" in page
    assert client.get("/rules/nothing/").status_code == 404

    # No worker has run: the database and the broker answer, the health marks are missing.
    cache.delete_many([health.worker_key(), health.sweep_key()])
    response = client.get("/healthz")
    assert response.status_code == 503, response.content
    body = json.loads(response.content)
    assert body["ok"] is False and body["failing"] == ["worker", "sweep"]
    assert body["problems"] == [
        "worker: no worker has written a heartbeat (is a Celery worker running?)",
        "sweep: no sweep has run (is the Celery beat running?)",
    ]
    # A worker's heartbeat and a sweep, just now (what the worker does, tests/test_health.py).
    health.worker_heartbeat()
    health.sweep_done()
    response = client.get("/healthz")
    assert response.status_code == 200, response.content
    assert json.loads(response.content) == {"ok": True, "failing": [], "problems": []}
    # A heartbeat older than HEALTH_FRESH_SECONDS is stale.
    cache.set(health.worker_key(), time.time() - 120)
    response = client.get("/healthz")
    assert response.status_code == 503
    assert json.loads(response.content)["problems"] == [
        "worker: a worker's last heartbeat was 120 s ago (more than 60 s)"
    ]
    cache.delete_many([health.worker_key(), health.sweep_key()])


def test_the_seed_reaches_nobody_before_the_end(client, make_cornmaze, make_user):
    game = make_cornmaze(seats=3)
    core.move_submit(
        game_id=game.pk,
        user=seat_user(game, to_move(game)),
        number=0,
        move={"shifts": a_legal_move(game)},
    )
    game.refresh_from_db()
    secret = game.seed_hex
    viewers = [None, make_user(), *(seat_user(game, i) for i in range(3))]
    for viewer in viewers:
        client.logout()
        if viewer is not None:
            client.force_login(viewer)
        for url, extra in [
            ("/", {}),
            (f"/games/{game.pk}/", {}),
            (f"/games/{game.pk}/", HTMX),
            (f"/games/{game.pk}/?since=0", HTMX),
            (f"/games/{game.pk}/record.json", {}),
        ]:
            body = client.get(url, **extra).content.decode()
            assert secret not in body and secret.upper() not in body, (viewer, url)
            assert '"rng"' not in body and "'rng'" not in body


def test_admin_lists_games_seats_moves_and_users(admin_client, make_cornmaze):
    game = make_cornmaze()
    for url in [
        "/admin/games/game/",
        f"/admin/games/game/{game.pk}/change/",
        "/admin/games/seat/",
        "/admin/games/move/",
        "/admin/auth/user/",
        "/admin/games/profile/",
    ]:
        assert admin_client.get(url).status_code == 200, url


def test_your_games_are_paged_your_move_first_least_time_left_first(client, make_cornmaze):
    from datetime import timedelta

    from games import clock
    from games.archive.selectors import YOUR_GAMES_PAGE
    from games.models import Seat
    from tests.test_query_counts import copies

    game = make_cornmaze()
    me = seat_user(game, to_move(game))
    games = [game, *copies(game, 45)]
    now = clock.now()
    mine = Seat.objects.filter(user=me)
    # Half of them my move, each with its own time left; in the other half I wait.
    urgent, waiting = games[::2], games[1::2]
    for hours, g in enumerate(urgent, start=1):
        mine.filter(game=g).update(deadline=now + timedelta(hours=hours))
    mine.filter(game__in=waiting).update(deadline=None)
    client.force_login(me)

    def page(number):
        html = client.get(reverse("lobby") + f"?page={number}").content.decode()
        section = html.split('id="your-games"')[1].split("</section>")[0]
        ids = [int(pk) for pk in re.findall(r'<a href="/games/(\d+)/">', section)]
        return section, ids

    first, first_ids = page(1)
    second, second_ids = page(2)
    third, third_ids = page(3)
    assert [len(first_ids), len(second_ids), len(third_ids)] == [YOUR_GAMES_PAGE, 20, 6]
    assert first_ids + second_ids[:3] == [g.pk for g in urgent]  # the least time left first
    assert sorted(second_ids[3:] + third_ids) == sorted(g.pk for g in waiting)
    assert first.count("your move ·") == 20 and second.count("your move ·") == 3
    # Links to the other pages, which work without JavaScript.
    assert 'href="?page=2#your-games"' in first and "?page=0" not in first
    assert 'href="?page=1#your-games"' in second and 'href="?page=3#your-games"' in second
    assert 'href="?page=2#your-games"' in third and "?page=4" not in third
    # A page past the end says so, and a page that cannot be read is the first.
    assert "No more of your games" in page(4)[0]
    assert page("x")[1] == first_ids


# --- "Your move: N" in the header and the title --------------------------------------------------


def _title(html: str) -> str:
    match = re.search(r"<title[^>]*>(.*?)</title>", html, re.S)
    assert match
    return match.group(1).strip()


def _icon(html: str) -> str:
    match = re.search(r'<link rel="icon" id="favicon" href="([^"]*)"', html)
    assert match
    return match.group(1)


def test_the_header_and_title_count_the_games_where_it_is_your_move(
    client, make_user, make_cornmaze
) -> None:
    me = make_user()
    client.force_login(me)

    def page() -> str:
        return client.get(reverse("lobby")).content.decode()

    html = page()
    assert _title(html) == "Lobby · mazesite"
    assert 'id="your-move"' not in html
    assert 'data-count="0"' in html
    assert _icon(html) == "/static/img/favicon.svg"

    # A game where it is the other player's move does not count.
    theirs = make_cornmaze()
    theirs.seats.filter(index=1 - to_move(theirs)).update(user=me)
    html = page()
    assert _title(html) == "Lobby · mazesite"
    assert "Your move:" not in html

    for n in (1, 2):
        mine = make_cornmaze()
        mine.seats.filter(index=to_move(mine)).update(user=me)
        html = page()
        assert _title(html) == f"({n}) Lobby · mazesite"
        assert (
            f'<a class="your-move" id="your-move" href="{reverse("lobby")}#your-games">'
            f"Your move: {n}</a>" in html
        )
    assert 'data-count="2"' in html  # where a game's page counts on from (static/js/site.js)
    assert _icon(html) == "/static/img/favicon-your-move.svg"  # the site icon's badge
    # Every page shows it, not only the lobby.
    assert _title(client.get(reverse("archive")).content.decode()).startswith("(2) ")

    client.logout()
    assert "Your move:" not in page()


def test_your_games_polls_itself_with_the_title_and_works_without_javascript(
    client, make_user, make_cornmaze
) -> None:
    me = make_user()
    client.force_login(me)
    game = make_cornmaze()
    game.seats.filter(index=to_move(game)).update(user=me)
    page = client.get(reverse("lobby")).content.decode()
    # A plain section of the page, which htmx polls.
    assert re.search(
        r'<section id="your-games" hx-get="/\?page=1&amp;part=your-games" '
        r'hx-trigger="every 20s" hx-swap="outerHTML">',
        page,
    )
    assert f"#{game.pk}</a>" in page
    finished = reverse("player", args=[me.get_username()])
    assert f'<a href="{finished}" id="your-finished-games">Your finished games</a>' in page
    poll = client.get(reverse("lobby") + "?page=1&part=your-games", HTTP_HX_REQUEST="true")
    body = poll.content.decode()
    assert poll.status_code == 200
    assert "<title>(1) Lobby · mazesite</title>" in body
    assert '<section id="your-games"' in body and f"#{game.pk}</a>" in body
    assert (
        f'<span id="your-move-slot" data-count="1" data-href="{reverse("lobby")}#your-games" '
        'hx-swap-oob="true">' in body
    )
    assert "Your move: 1" in body
    assert 'id="open-games"' not in body and "<header" not in body
    # The site icon with its badge, swapped out of band.
    assert re.search(
        r'<link rel="icon" id="favicon" href="[^"]*favicon-your-move[^"]*" data-plain="[^"]*" '
        r'data-badge="[^"]*" type="image/svg\+xml" hx-swap-oob="true">',
        body,
    )
    # Without htmx the same address is the whole lobby.
    assert 'id="open-games"' in client.get(reverse("lobby") + "?part=your-games").content.decode()
    # Signed out, the poll stops (286) and shows nothing of anybody's.
    client.logout()
    gone = client.get(reverse("lobby") + "?part=your-games", HTTP_HX_REQUEST="true")
    assert gone.status_code == 286 and gone.content == b""


def test_player_names_link_to_their_pages_in_the_lobby_and_the_game_page(
    client, make_user, make_cornmaze
) -> None:
    game = make_cornmaze()
    with_bot = make_cornmaze(bots=["simple"])
    me = seat_user(game, 0)
    client.force_login(me)
    for url in (reverse("lobby"), reverse("game", args=[game.pk])):
        html = client.get(url).content.decode()
        for seat in game.seats.all():
            assert seat.user is not None
            name = seat.user.get_username()
            player = reverse("player", args=[name])
            assert f'<span class="seat-name"><a href="{player}">{name}</a></span>' in html
    html = client.get(reverse("game", args=[with_bot.pk])).content.decode()
    bot = with_bot.seats.get(index=1)
    assert bot.bot
    assert f'<span class="seat-name">{bot.name}</span>' in html  # a bot has no page
    assert client.get(reverse("player", args=[me.get_username()])).status_code == 200


def test_a_get_of_a_forms_post_address_goes_to_the_forms_page(client, make_cornmaze, make_user):
    """Without JavaScript a refusal is drawn at the form's address (/games/7/give-time); that
    page reloaded or restored is a GET, which used to be a blank 405. Every address of a game
    that takes only posts sends a GET to the game's page, an account's to the account page;
    another method is still refused."""
    from django.urls import get_resolver

    game = make_cornmaze()
    client.force_login(seat_user(game, 0))
    page = reverse("game", args=[game.pk])
    posts_only = []
    for pattern in get_resolver().url_patterns:
        name = getattr(pattern, "name", None)
        if name and str(pattern.pattern).startswith("games/<game_id:game_id>/"):
            if "<str:token>" in str(pattern.pattern):
                continue
            url = reverse(name, args=[game.pk])
            response = client.get(url)
            assert response.status_code in {200, 302}, url
            if response.status_code == 302 and response["Location"] == page:
                posts_only.append(name)
            assert client.put(url).status_code in {403, 405}, url
    # Resign, decline, withdraw and abort answer a GET with the page that asks first.
    assert {"game_move", "game_give_time", "game_join", "game_chat_post", "game_accept"} <= set(
        posts_only
    )
    for name in ("guest_claim", "email_change", "vacation_start", "time_zone_change"):
        response = client.get(reverse(name))
        assert (response.status_code, response["Location"]) == (302, reverse("account")), name
    assert Move.objects.filter(game=game).count() == 0
