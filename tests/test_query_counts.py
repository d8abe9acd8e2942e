"""Queries pinned for the pages and posts every player hits: the move POST of each game, the
lobby (anonymous, and signed in with 20 games of one's own) and the game page of each game for
each role (the player to move, the other player, a spectator signed in, anybody); and the move
POST, the game page and the lobby of players with 1 and with 500 games of their own. Each count is
taken twice, with little and with much more data (moves played, games of one's own, other
games), and must be the same both times and the pinned number: no page grows with the data."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.conf import settings
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from games.engines import mazerace as race_rules
from games.engines import robotmaze
from games.models import Game, Seat
from games.play import core
from games.play.paces import race
from tests.conftest import _delete_cache_keys, a_legal_move, seat_user, to_move
from tests.test_robotmaze_site import WAREHOUSES

HTMX = {"HTTP_HX_REQUEST": "true"}

pytestmark = pytest.mark.django_db

# The pinned numbers. A change here is a change in what a page costs: say why in the commit.
# A signed-in request reads its session from the cache (games/accounts/sessions.py), and its
# user with the profile from the cache once a request has kept it there (games/accounts/
# backends.py): no query. Each count below is one after the viewer's first request.
# The move POST answers htmx with the game's partial, so it holds a game page's reads too.
# The game's lock takes its lock_timeout in the same statement (play.core.game_locked); a
# game by turns deletes the mover's reminder and writes the next player's in one statement
# (mail.notices.turns_changed); the session comes from the cache (accounts.sessions). The move,
# the game, the seats' deadlines and the reminders are written in one statement
# (statements.writes_together). The mover's move log, kept at the ply of the page it moved
# from, grows by the move played without a read (pages/contexts._log; kept some plies earlier:
# one read of the plies since).
MOVE_POST = {"cornmaze": 5, "robotmaze": 5, "mazerace": 5, "mazerace-live": 5}
# A race's page reads no moves: it shows no log.
# The full page shows the game's chat: no query while nobody wrote in it (the key's statement
# says whether anyone did), else one for its latest messages and one for whom the viewer muted
# (tests/test_chat.py::test_the_game_page_costs_the_same_with_a_long_chat).
# Every look first reads the key of the game's kept partial (games/pages/game_cache.py, one
# query: the seats with the game's version; a signed-in viewer's full page reads "Your move: N"
# for the header and title in the same statement); these are a page drawn afresh, the most it
# costs.
BY_TURNS_PAGE = {"player": 4, "other": 4, "spectator": 4, "anonymous": 4}
GAME_PAGE = {
    "cornmaze": BY_TURNS_PAGE,
    "robotmaze": BY_TURNS_PAGE,
    "mazerace": {"player": 3, "other": 3, "spectator": 3, "anonymous": 3},
}
# A look at a page whose partial is kept: the key with "Your move: N" (and the chat, once
# anyone wrote); the htmx partial alone, the key.
KEPT_PAGE = {"player": 1, "anonymous": 1}
KEPT_PARTIAL = {"player": 1, "anonymous": 1}
# The open games and the games in progress, with their seats, in one query; signed in, a page of
# "your games" with their seats in one, "your finished games" in one (a page of the archive's
# keyset read), the challenges waiting for your answer (issue 15) and "Your move: N".
LOBBY = {"anonymous": 1, "signed-in": 5}
LOBBY_POLL = 3  # the "your games" section's own poll (htmx): no open or running lists
# A player page: the player with results and streak, the games, the ratings with their history
# (bounded: the newest games only). The leaderboard: one page along its index. Signed in,
# "Your move: N" comes on top (the session and the user are read from the cache).
PLAYER_PAGE = {"anonymous": 3, "signed-in": 4}
LEADERBOARD = {"anonymous": 1, "signed-in": 2}


def queries(call: Callable[[], Any]) -> tuple[int, Any]:
    with CaptureQueriesContext(connection) as captured:
        result = call()
    return len(captured.captured_queries), result


def client_for(user: Any) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def letters(shifts: list[int]) -> list[str]:
    return [chr(ord("a") + c) for c in shifts]


# --- each game: a started game, and a legal move as its form posts it -------------------------


def cornmaze_form(game: Game) -> tuple[Any, dict[str, str]]:
    game.refresh_from_db()
    seat = to_move(game)
    first, second = letters(a_legal_move(game))
    return seat_user(game, seat), {"ply": str(game.ply), "first": first, "second": second}


def robotmaze_joined(make_user: Callable[..., Any]) -> Game:
    """A Robot Maze Race of two people, both seated, neither set up."""
    game = core.game_create(
        kind="robotmaze",
        creator=make_user(),
        options={},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
    )
    core.game_join(game_id=game.pk, user=make_user())
    return game


def robotmaze_game(make_user: Callable[..., Any]) -> Game:
    game = robotmaze_joined(make_user)
    for seat in (0, 1):
        game.refresh_from_db()
        core.move_submit(
            game_id=game.pk,
            user=seat_user(game, seat),
            number=core.move_number(game, seat),
            move={"warehouse": WAREHOUSES[seat]},
        )
    game.refresh_from_db()
    return game


def robotmaze_form(game: Game) -> tuple[Any, dict[str, str]]:
    game.refresh_from_db()
    assert game.state is not None
    (seat,) = robotmaze.to_move(game.state)
    # A step that bumps into the edge at worst: the game goes on either way.
    return seat_user(game, seat), {"ply": str(game.ply), "command_1": "U", "runs": "1"}


def race_game(make_user: Callable[..., Any], clock: str) -> Game:
    with core.bot_tasks_paused():
        game = core.game_create(
            kind="mazerace",
            creator=make_user(),
            options={"mode": "live" if clock == "live" else "slow"},
            clock_choice=clock,
            seats=[core.SeatPlan(), core.SeatPlan()],
        )
        core.game_join(game_id=game.pk, user=make_user())
    game.refresh_from_db()
    return game


def race_form(game: Game, seat: int = 0) -> tuple[Any, dict[str, str]]:
    game.refresh_from_db()
    assert game.state is not None
    view = race_rules.view(game.state, seat)
    here = race_rules.mazegen.CELL_OF[view["at"]]
    way = next(
        d for d in view["open"] if here + race_rules.mazegen.STEP[d] != race_rules.mazegen.EXIT
    )
    return seat_user(game, seat), {"step": str(view["steps"]), "dir": way}


def more_data(make_cornmaze: Callable[..., Game], user: Any = None, games: int = 20) -> None:
    """Other games, with moves, some of them `user`'s own."""
    for n in range(games):
        other = make_cornmaze()
        if user is not None and n % 2 == 0:
            seat = other.seats.get(index=1)
            seat.user = user
            seat.save(update_fields=["user"])
        mover, form = cornmaze_form(other)
        core.move_submit(
            game_id=other.pk,
            user=mover,
            number=other.ply,
            move={"shifts": [ord(c) - ord("a") for c in (form["first"], form["second"])]},
        )


def post_move(game: Game, form_of: Callable[[Game], tuple[Any, dict[str, str]]]) -> int:
    user, form = form_of(game)
    client = client_for(user)
    client.get(reverse("game", args=[game.pk]))  # the session and the CSRF cookie, as a page
    ply = Game.objects.get(pk=game.pk).version
    count, response = queries(
        lambda: client.post(reverse("game_move", args=[game.pk]), form, **HTMX)
    )
    assert response.status_code == 200, response.content.decode()[:500]
    assert Game.objects.get(pk=game.pk).version > ply  # the move was played
    return count


# --- the move POST -----------------------------------------------------------------------------


def test_the_move_post_of_a_corn_maze(make_cornmaze) -> None:
    game = make_cornmaze(seats=3)
    first = post_move(game, cornmaze_form)
    more_data(make_cornmaze)
    for _ in range(3):
        post_move(game, cornmaze_form)
    assert (first, post_move(game, cornmaze_form)) == (MOVE_POST["cornmaze"],) * 2


def test_the_move_post_of_a_robot_maze_race(make_user, make_cornmaze) -> None:
    game = robotmaze_game(make_user)
    first = post_move(game, robotmaze_form)
    more_data(make_cornmaze)
    for _ in range(3):
        post_move(game, robotmaze_form)
    assert (first, post_move(game, robotmaze_form)) == (MOVE_POST["robotmaze"],) * 2


def test_the_move_post_of_a_slow_maze_race(make_user, make_cornmaze) -> None:
    game = race_game(make_user, "P3D")
    first = post_move(game, race_form)
    more_data(make_cornmaze)
    for _ in range(3):
        post_move(game, race_form)
    assert (first, post_move(game, race_form)) == (MOVE_POST["mazerace"],) * 2


def test_the_move_post_of_a_live_maze_race(make_user, make_cornmaze) -> None:
    with time_machine.travel("2026-06-01 12:00:00+00:00", tick=False) as traveller:
        game = race_game(make_user, "live")
        for seat in game.seats.all():
            race.race_ready(game_id=game.pk, user=seat.user)
        traveller.shift(5)  # past the countdown
        first = post_move(game, race_form)
        more_data(make_cornmaze)
        for _ in range(3):
            traveller.shift(1)  # a step lands 250 ms after the last
            post_move(game, race_form)
        traveller.shift(1)
        assert (first, post_move(game, race_form)) == (MOVE_POST["mazerace-live"],) * 2


# --- the game page of each game for each role ------------------------------------------------


def logs_forgotten() -> None:
    """The game page keeps each viewer's drawn move log in the cache (pages/contexts.py): the
    counts below are those of a page whose log is not kept yet, the most a page costs."""
    _delete_cache_keys(settings.GAME_LOG_CACHE_PREFIX)


def page_counts(game: Game, clients: dict[str, Client]) -> dict[str, int]:
    url = reverse("game", args=[game.pk])
    counts = {}
    for role, client in clients.items():
        logs_forgotten()
        count, response = queries(lambda client=client: client.get(url))
        assert response.status_code == 200
        counts[role] = count
    return counts


def game_and_form(
    kind: str, make_user: Callable[..., Any], make_cornmaze: Callable[..., Game]
) -> tuple[Game, Callable[[Game], Any]]:
    """A running game of this kind and the function that makes its next move's form."""
    if kind == "cornmaze":
        return make_cornmaze(), cornmaze_form
    if kind == "robotmaze":
        return robotmaze_game(make_user), robotmaze_form
    return race_game(make_user, "P3D"), race_form


@pytest.mark.parametrize("kind", ["cornmaze", "robotmaze", "mazerace"])
def test_the_game_page_for_each_role(kind, make_user, make_cornmaze) -> None:
    game, form_of = game_and_form(kind, make_user, make_cornmaze)
    mover, _ = form_of(game)
    other = next(s.user for s in game.seats.all() if s.user != mover)
    clients = {
        "player": client_for(mover),
        "other": client_for(other),
        "spectator": client_for(make_user()),
        "anonymous": client_for(None),
    }
    for client in clients.values():
        client.get(reverse("lobby"))  # sessions made before counting
    before = page_counts(game, clients)
    more_data(make_cornmaze, user=mover)
    for _ in range(3):
        post_move(game, form_of)
    game.refresh_from_db()
    assert game.status == Game.Status.ACTIVE
    if kind != "mazerace":  # the player to move is the other one now and then: keep the roles
        mover_now, _ = form_of(game)
        if mover_now != mover:
            clients["player"], clients["other"] = clients["other"], clients["player"]
    assert (before, page_counts(game, clients)) == (GAME_PAGE[kind], GAME_PAGE[kind])


@pytest.mark.parametrize("kind", ["cornmaze", "robotmaze", "mazerace"])
def test_a_game_page_seen_again_is_kept(kind, make_user, make_cornmaze) -> None:
    """The second look at a page, by the same viewer at the same version, takes the game's
    partial drawn the first time from the cache: it reads neither the game, its seats nor its
    moves (games/pages/game_cache.py); the same with many more games and moves."""
    game, form_of = game_and_form(kind, make_user, make_cornmaze)
    for _ in range(2):
        post_move(game, form_of)
    mover, _ = form_of(game)
    clients = {"player": client_for(mover), "anonymous": client_for(None)}
    for client in clients.values():
        client.get(reverse("lobby"))
    logs_forgotten()
    first = page_counts_warm(game, clients)
    second = page_counts_warm(game, clients)
    expected = {role: GAME_PAGE[kind][role] for role in clients}
    if kind == "cornmaze":  # the player's look drew the log that every viewer shares
        expected["anonymous"] -= 1
    assert first == expected
    assert second == KEPT_PAGE
    assert page_counts_warm(game, clients, **HTMX) == KEPT_PARTIAL
    more_data(make_cornmaze, user=mover)
    assert page_counts_warm(game, clients) == KEPT_PAGE


def page_counts_warm(game: Game, clients: dict[str, Client], **headers: str) -> dict[str, int]:
    url = reverse("game", args=[game.pk])
    return {role: queries(lambda c=c: c.get(url, **headers))[0] for role, c in clients.items()}


# --- the lobby ---------------------------------------------------------------------------------


def test_the_lobby_anonymous_and_with_twenty_games_of_ones_own(make_user, make_cornmaze) -> None:
    me = make_user()
    mine, anybody = client_for(me), client_for(None)
    mine.get(reverse("lobby"))
    anybody.get(reverse("lobby"))
    more_data(make_cornmaze, user=me, games=2)
    little = {
        "anonymous": queries(lambda: anybody.get(reverse("lobby")))[0],
        "signed-in": queries(lambda: mine.get(reverse("lobby")))[0],
    }
    more_data(make_cornmaze, user=me, games=40)  # 20 more of my own, 20 of others
    assert me.seats.count() >= 20
    much = {
        "anonymous": queries(lambda: anybody.get(reverse("lobby")))[0],
        "signed-in": queries(lambda: mine.get(reverse("lobby")))[0],
    }
    assert (little, much) == (LOBBY, LOBBY)


# --- 1 and 500 games of one's own ------------------------------------------------------------


def copies(game: Game, n: int) -> list[Game]:
    """`n` more running games between the same players, as far on as `game`, made at once."""
    game.refresh_from_db()
    seats = list(game.seats.all())
    fields = ("kind", "options", "clock", "status", "seed", "seed_sha256", "state", "ply")
    made = Game.objects.bulk_create(
        [
            Game(**{f: getattr(game, f) for f in fields}, started_at=game.started_at)
            for _ in range(n)
        ]
    )
    Seat.objects.bulk_create(
        [
            Seat(game=g, index=s.index, user=s.user, deadline=s.deadline, joined_at=s.joined_at)
            for g in made
            for s in seats
        ]
    )
    return made


def own_counts(game: Game, *, many: bool) -> dict[str, int]:
    mover, form = cornmaze_form(game)
    client = client_for(mover)
    client.get(reverse("lobby"))  # the session made before counting
    move = post_move(game, cornmaze_form)
    logs_forgotten()
    counts = {
        "move": move,
        "page": queries(lambda: client.get(reverse("game", args=[game.pk])))[0],
        "lobby": queries(lambda: client.get(reverse("lobby")))[0],
    }
    if many:  # a later page of "your games" costs the first page's queries
        counts["lobby-page-2"] = queries(lambda: client.get(reverse("lobby") + "?page=2"))[0]
    return counts


def test_the_move_page_and_lobby_with_one_and_with_500_games_of_ones_own(make_cornmaze) -> None:
    game = make_cornmaze()
    one = own_counts(game, many=False)
    copies(game, 499)
    for seat in game.seats.all():
        assert seat.user is not None
        assert seat.user.seats.filter(game__status=Game.Status.ACTIVE).count() == 500
    many = own_counts(game, many=True)
    expected = {
        "move": MOVE_POST["cornmaze"],
        "page": GAME_PAGE["cornmaze"]["player"],
        "lobby": LOBBY["signed-in"],
    }
    assert (one, many) == (expected, {**expected, "lobby-page-2": LOBBY["signed-in"]})


def test_your_games_is_planned_once_on_a_connection_not_for_every_look(make_cornmaze) -> None:
    """The statement of "your games" (every signed-in lobby and its poll) is prepared on the
    connection, and PostgreSQL keeps its plan: with its constants as parameters it planned it
    afresh for every look (custom plans only), 40% of its time in PostgreSQL."""
    from games.archive import selectors

    game = make_cornmaze()
    player = seat_user(game, 0)
    # psycopg prepares it at its fifth run on the connection; PostgreSQL plans the first five
    # executions of a prepared statement for their parameters, then keeps a generic plan if
    # that is no worse.
    for _ in range(20):
        assert [r.game.id for r in selectors.your_games(player)] == [game.pk]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
            " WHERE statement LIKE %s",
            ["%FROM games_seat me%me.user_id = $%"],
        )
        ((generic, custom),) = cursor.fetchall()
    assert generic >= 10 and custom <= 5


def test_the_lobby_and_its_poll_with_few_and_many_finished_games_of_ones_own(
    make_user, make_cornmaze
) -> None:
    from tests.test_archive import bulk_finished

    me, rival = make_user(), make_user()
    running = make_cornmaze()  # a running game of one's own, as in the other lobby counts
    running.seats.filter(index=0).update(user=me)
    mine = client_for(me)
    mine.get(reverse("lobby"))
    poll = reverse("lobby") + "?page=1&part=your-games"

    def counts() -> dict[str, int]:
        first = mine.get(reverse("lobby"))
        older = re.search(r'href="\?page=1&amp;(done_after=[0-9.]+)#your-finished"', first.text)
        counted = {
            "lobby": queries(lambda: mine.get(reverse("lobby")))[0],
            "poll": queries(lambda: mine.get(poll, **HTMX))[0],
        }
        if older:
            query = "?page=1&" + older[1]
            counted["older"] = queries(lambda: mine.get(reverse("lobby") + query))[0]
            counted["older-poll"] = queries(lambda: mine.get(poll + "&" + older[1], **HTMX))[0]
        return counted

    bulk_finished(2, [me, rival])
    little = counts()
    bulk_finished(300, [rival, me, "simple"], winner=1)
    much = counts()
    assert little == {"lobby": LOBBY["signed-in"], "poll": LOBBY_POLL}
    assert much == {**little, "older": LOBBY["signed-in"], "older-poll": LOBBY_POLL}


# --- ratings: a player page with 10,000 rated games, the leaderboard --------------------------


def rated_counts(player: Any, clients: dict[str, Client]) -> dict[str, int]:
    counts = {}
    for role, client in clients.items():
        count, response = queries(lambda c=client: c.get(f"/players/{player.username}/"))
        assert response.status_code == 200 and 'id="ratings"' in response.content.decode()
        counts[f"player {role}"] = count
        count, response = queries(lambda c=client: c.get("/leaderboard/cornmaze/"))
        assert response.status_code == 200
        counts[f"leaderboard {role}"] = count
    return counts


def test_a_player_page_with_10000_rated_games_and_the_leaderboard(make_user) -> None:
    from games.archive.ratings import ratings_recompute
    from tests.test_archive import T0, bulk_finished

    ann, bob, cat = make_user("ann"), make_user("bob"), make_user("cat")
    clients = {"anonymous": client_for(None), "signed-in": client_for(cat)}
    for client in clients.values():
        client.get(reverse("lobby"))  # sessions made before counting
    bulk_finished(5, [ann, bob], winner=0)
    bulk_finished(5, [ann, "simple"], winner=1, kind="robotmaze")
    ratings_recompute()
    little = rated_counts(ann, clients)
    for n in range(10):  # bulk_create's parameters stay under PostgreSQL's limit
        at = T0 - timedelta(days=30 + n)
        bulk_finished(500, [ann, bob], winner=n % 2, at=at, step=timedelta(0))
        bulk_finished(499, [bob, ann, "strong"], winner=2, at=at - timedelta(hours=12))
    assert ratings_recompute() == 10_000
    assert sum(r.games for r in ann.ratings.all()) == 10_000
    much = rated_counts(ann, clients)
    expected = {
        **{f"player {role}": n for role, n in PLAYER_PAGE.items()},
        **{f"leaderboard {role}": n for role, n in LEADERBOARD.items()},
    }
    assert (little, much) == (expected, expected)
