"""Every move counts once: each move form carries the seat's move number (the ply in a game by
turns, the runner's own step count in a race), and the same move posted many times at once is
applied once, the rest refused with a sentence. Against the real PostgreSQL, with real threads:
the game's lock serializes the posts, so exactly one finds its number current."""

from __future__ import annotations

import contextlib
import hashlib
import random
import threading
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import time_machine
from django.conf import settings
from django.db import connections
from django.test import Client

from games import engines
from games.engines import mazerace as race_rules
from games.engines import robotmaze
from games.models import Game, Move
from tests.test_mazerace_site import (
    HTMX,
    T0,
    an_open_way,
    at,
    client_for,
    make_race,
    ready_all,
    state_of,
)
from tests.worker_fixtures import legal_move, make_game, make_player, player_at, to_move

POSTS = 20


def robot_warehouse() -> list[str]:
    return robotmaze.random_warehouse(random.Random(0))


ROUNDS = 3
TAKEN = "That step was taken already: the same step counts once."
EARLIER = "That move was for an earlier position"
PLAYED = "You have played that move already: a move counts once."


def test_every_engine_whose_seats_move_apart_numbers_its_seats_moves() -> None:
    for slug, engine in engines.ENGINES.items():
        if engine.SEATS_MOVE_APART:
            # Its own count of each seat's moves, not the base's default (the game's ply).
            assert type(engine).move_number is not engines.Engine.move_number, slug
    state = race_rules.start(b"\x01" * 32, {"mode": "slow"}, 2)
    assert engines.move_number("mazerace", state, 1, ply=7) == 0
    way = race_rules.view(state, 1)["open"][0]
    state, _ = race_rules.apply(state, 1, {"dir": way})
    assert [engines.move_number("mazerace", state, s, ply=7) for s in (0, 1)] == [0, 1]
    cornmaze = engines.get_engine("cornmaze").start(b"\x01" * 32, {"size": 8}, 2)
    assert engines.move_number("cornmaze", cornmaze, 1, ply=7) == 7
    # Robot Maze Race's set-up is at once: each seat's warehouse is its move 0, whichever came
    # first; then the game's ply.
    robot = engines.get_engine("robotmaze")
    state = robot.start(b"\x01" * 32, {}, 2)
    state, _ = robot.apply(state, 1, {"warehouse": robot_warehouse()})
    assert [engines.move_number("robotmaze", state, s, ply=1) for s in (0, 1)] == [0, 1]
    state, _ = robot.apply(state, 0, {"warehouse": robot_warehouse()})
    assert [engines.move_number("robotmaze", state, s, ply=2) for s in (0, 1)] == [2, 2]


@pytest.fixture(autouse=True)
def patient_lock(settings) -> None:
    """Twenty posts at once queue for one game's lock, and on a busy test machine the last one
    may wait longer than the site's bound (GAME_LOCK_TIMEOUT_MS). That bound, and the "busy,
    try again" it answers, are tests/test_lock_wait.py's; here every post waits its turn."""
    settings.GAME_LOCK_TIMEOUT_MS = 60_000


def _posted_at_once(clients: list[Client], url: str, data: dict[str, str]) -> list[Any]:
    """Each client posts `data` to `url` from its own thread (and database connection), all let
    go by one barrier. Returns the responses (or what a thread raised), in client order. Each
    burst counts towards the moves-per-seat limit from zero (settings.RATE_LIMITS["move_seat"]
    allows more than 20 at once, not three bursts in one window), since this is about counting a
    move once, not about that limit (tests/test_limits.py)."""
    settings.RATELIMIT_CACHE_PREFIX += f"burst-{uuid.uuid4().hex[:8]}:"
    results: list[Any] = [None] * len(clients)
    barrier = threading.Barrier(len(clients))

    def post(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[index] = clients[index].post(url, data, **HTMX)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            results[index] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=post, args=(i,)) for i in range(len(clients))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return results


def _one_applied(results: list[Any], refusals: tuple[str, ...]) -> None:
    codes = sorted(getattr(r, "status_code", r) for r in results)
    assert codes == [200] + [409] * (POSTS - 1), codes
    for r in results:
        if r.status_code == 409:
            page = r.content.decode()
            assert any(sentence in page for sentence in refusals), page


def _next_step(game: Game, seat: int) -> tuple[str, dict[str, str]]:
    """The runner's next step as its page's form posts it: a direction and its step number."""
    direction = an_open_way(game, seat)
    number = state_of(game)["runners"][seat]["steps"]
    return f"/games/{game.pk}/move", {"step": str(number), "dir": direction}


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("queued")
@pytest.mark.parametrize("clock", ["P3D", "live"])
def test_the_same_race_step_posted_20_times_at_once_is_taken_once(clock: str) -> None:
    seed = hashlib.sha256(b"twenty at once").digest()
    with time_machine.travel(T0, tick=False):
        game = make_race(2, clock=clock, seed=seed)
        if clock == "live":
            ready_all(game)
    seat = 1  # the second runner: its step count is not the game's ply
    user = game.seats.get(index=seat).user
    clients = [client_for(user) for _ in range(POSTS)]
    other = client_for(game.seats.get(index=0).user)
    for round_ in range(1, ROUNDS + 1):
        # The other runner steps too, so the game's ply runs ahead of this runner's steps.
        url, data = _next_step(game, 0)
        with at(game, 1000 * round_) if clock == "live" else contextlib.nullcontext():
            assert other.post(url, data, **HTMX).status_code == 200
            url, data = _next_step(game, seat)
            results = _posted_at_once(clients, url, data)
        _one_applied(results, (TAKEN,))
        state = state_of(game)
        assert state["runners"][seat]["steps"] == round_
        assert Move.objects.filter(game=game, seat=seat).count() == round_
        assert game.ply == 2 * round_ and game.ply != state["runners"][seat]["steps"]
    # A step whose number is the runner's, posted again later: refused too.
    with at(game, 9000) if clock == "live" else contextlib.nullcontext():
        again = clients[0].post(url, data, **HTMX)
    assert again.status_code == 409 and TAKEN in again.content.decode()
    assert Move.objects.filter(game=game, seat=seat).count() == ROUNDS


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("queued")
def test_the_same_corn_maze_move_posted_20_times_at_once_is_applied_once() -> None:
    players = [make_player(), make_player()]
    game = make_game(*players)
    clients: dict[int, list[Client]] = {
        seat: [client_for(player_at(game, seat)) for _ in range(POSTS)] for seat in (0, 1)
    }
    for _ in range(ROUNDS):
        game.refresh_from_db()
        if game.status != Game.Status.ACTIVE:
            game = make_game(*players)
        seat, ply = to_move(game), game.ply
        first, second = ("abcdefgh"[c] for c in legal_move(game)["shifts"])
        data = {"ply": str(ply), "first": first, "second": second}
        results = _posted_at_once(clients[seat], f"/games/{game.pk}/move", data)
        _one_applied(results, (PLAYED, "The game is over."))
        assert Move.objects.filter(game=game).count() == ply + 1


def test_a_move_number_that_cannot_be_read_is_refused(
    make_cornmaze: Callable[..., Game],
) -> None:
    game = make_cornmaze()
    client = client_for(game.seats.get(index=to_move(game)).user)
    for number in ["", "²", "٣", "-0", "+0", "0x0", "0_0", " ", "1e3", "9" * 40]:
        response = client.post(
            f"/games/{game.pk}/move", {"ply": number, "first": "a", "second": "b"}, **HTMX
        )
        assert response.status_code == 409, number
        assert "That move cannot be read" in response.content.decode()
    assert not Move.objects.filter(game=game).exists()
