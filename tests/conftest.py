from __future__ import annotations

import copy
import functools
import hashlib
import itertools
import os
import random
import uuid
from collections.abc import Callable, Iterator
from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.test import override_settings

from games.bots import get_bot
from games.engines import cornmaze
from games.models import Game, Vacation
from games.play import core

# The real worker, broker queue and mail server (queued, smtp_server, celery_worker_process).
pytest_plugins = ["tests.worker_fixtures", "tests.events_fixtures"]

# Playwright's sync API runs an event loop in the test thread; Django's ORM must still be usable.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

_names = itertools.count(1)


def _replica_alias() -> None:
    """A "replica" connection for the router's tests (tests/test_operations.py): a second
    connection to this test database (its TEST MIRROR). settings.DATABASES does not name it, so
    the site reads nothing from it unless a test puts it there (mazesite.dbrouter.has_replica)."""
    from django.db import connections

    if "replica" not in connections.settings:
        config = copy.deepcopy(connections.settings["default"])
        config["OPTIONS"].pop("pool", None)
        config["TEST"] = {**config.get("TEST", {}), "MIRROR": "default"}
        connections.settings["replica"] = config


_replica_alias()


@pytest.fixture(scope="session", autouse=True)
def no_collected_static_files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Tests serve the static files from static/ (the finders), never from a staticfiles/ that a
    `make serve` or a bench's collectstatic left in the checkout: WhiteNoise reads all of that
    folder for each test client made (test_fuzz makes one a request), which doubled the suite."""
    with override_settings(STATIC_ROOT=str(tmp_path_factory.mktemp("staticfiles"))):
        yield


@pytest.fixture(autouse=True)
def fast_password_hashing(settings) -> None:
    """Django's PBKDF2 (a million rounds: half a second a password on this machine, seconds on
    a busy one) for each of the suite's thousands of users made would be most of its time.
    Which hasher the site uses is Django's concern; the tests check that passwords work."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def rate_limit_counts(request: pytest.FixtureRequest, settings) -> Iterator[str]:
    """The limits are on in every test, at the site's rates (settings.RATE_LIMITS), but each
    test counts from zero: its requests all come from 127.0.0.1 and its users are few, so no
    test reaches a rate unless it means to. Each test (and each example of a hypothesis test,
    which may post hundreds of requests in all) gets its own key prefix, and its counts are
    deleted at the end (never `cache.clear()`: the Redis database is shared)."""
    prefix = f"rl:test-{uuid.uuid4().hex}:"
    examples = itertools.count()
    settings.RATELIMIT_CACHE_PREFIX = prefix
    hypothesis = getattr(getattr(request.node, "obj", None), "hypothesis", None)
    inner = getattr(hypothesis, "inner_test", None)
    if inner is not None:

        @functools.wraps(inner)
        def each_example(*args: object, **kwargs: object) -> object:
            settings.RATELIMIT_CACHE_PREFIX = f"{prefix}{next(examples)}:"
            return inner(*args, **kwargs)

        hypothesis.inner_test = each_example
    yield prefix
    if inner is not None:
        hypothesis.inner_test = inner
    _delete_cache_keys(prefix)


@pytest.fixture(autouse=True)
def chat_seen_marks(settings) -> Iterator[str]:
    """Which chat messages a player has read is kept in the cache (games/mail/chatnews.py),
    for weeks: each test has its own prefix, so that a game id of an earlier run's test
    database never finds its marks, and they are deleted at the end."""
    prefix = f"chatseen:test-{uuid.uuid4().hex}:"
    settings.CHAT_SEEN_CACHE_PREFIX = prefix
    yield prefix
    _delete_cache_keys(prefix)


@pytest.fixture(autouse=True)
def watching_marks(settings) -> Iterator[str]:
    """Who has a game open is kept in the cache by game and user id (games/mail/watching.py),
    for a minute, at the time of the poll: each test has its own prefix, so that a test run
    again within the minute (its database gives the same ids) never finds the last run's
    marks, and they are deleted at the end."""
    prefix = f"watching:test-{uuid.uuid4().hex}:"
    settings.WATCHING_CACHE_PREFIX = prefix
    yield prefix
    _delete_cache_keys(prefix)


@pytest.fixture(autouse=True)
def health_marks(settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The health marks (games/web/health.py) of this test alone, in this process and in the
    worker processes it starts (which take the prefix from their environment): a sweep run at
    a travelled time, by this test or by one in another process, never leaves another test a
    mark from the past or the future."""
    prefix = f"health:test-{uuid.uuid4().hex}:"
    settings.HEALTH_CACHE_PREFIX = prefix
    monkeypatch.setenv("HEALTH_CACHE_PREFIX", prefix)
    yield prefix
    _delete_cache_keys(prefix)


@pytest.fixture(autouse=True)
def game_log_cache(settings) -> Iterator[str]:
    """The game page keeps drawn move logs in the cache by game id, seed, ply and viewer: each
    test gets its own prefix (ids and fixed seeds come again in other tests and runs), and its
    logs are deleted at the end."""
    prefix = f"game-log:test-{uuid.uuid4().hex}:"
    settings.GAME_LOG_CACHE_PREFIX = prefix
    yield prefix
    _delete_cache_keys(prefix)


@pytest.fixture(autouse=True)
def user_cache(settings) -> Iterator[str]:
    """The signed-in user is kept in the cache by id (games/accounts/backends.py): each test
    gets its own prefix (an earlier run's test database had the same ids), deleted at the end.
    A change forgets the user without the mark that lasts seconds, so that what a test counts does
    not hang on how fast it runs (tests/test_accounts.py tests the mark)."""
    prefix = f"user:test-{uuid.uuid4().hex}:"
    settings.USER_CACHE_PREFIX = prefix
    settings.USER_CACHE_MARK_SECONDS = 0
    yield prefix
    _delete_cache_keys(prefix)


def _delete_cache_keys(prefix: str) -> None:
    from django.conf import settings as django_settings
    from django.core.cache import cache

    config = django_settings.CACHES["default"]
    if not config["BACKEND"].endswith(".RedisCache"):
        return  # a cache of files or memory belongs to this run alone
    import redis

    location = config["LOCATION"]
    client = redis.Redis.from_url(location[0] if isinstance(location, list) else location)
    try:
        keys = list(client.scan_iter(match=cache.make_key(prefix) + "*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


def unavailable(reason: str) -> None:
    """A service or browser the test needs is missing: skipped in a run by hand, but a failure
    under `make test` (which sets MAZESITE_TEST_STRICT), so no coverage disappears quietly."""
    if os.environ.get("MAZESITE_TEST_STRICT"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture
def make_user(db: None) -> Callable[..., AbstractBaseUser]:
    def make(
        name: str | None = None,
        password: str = "a-long-passphrase",
        automatic_vacation: bool = False,
    ) -> AbstractBaseUser:
        """A registered player. Automatic vacation (on by default on the site, issue 14) is
        off unless asked for, so that a clock that runs out in a test times its seat out."""
        user = get_user_model().objects.create_user(
            username=name or f"player{next(_names)}", password=password
        )
        if not automatic_vacation:
            Vacation.objects.create(user=user, automatic=False)
        return user

    return make


@pytest.fixture(autouse=True)
def seeded_games(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every game a test makes (through the services, the views or the live server's thread)
    draws its seed from the test's name and how many games it made before: the same boards,
    first movers, warehouses and bots' moves every run, so that no test depends on the luck of
    a board (a few quiet Corn maze moves end about one game in seven by ply 8)."""
    made = itertools.count()

    def new_seed() -> tuple[bytes, str]:
        seed = hashlib.sha256(f"{request.node.nodeid}:{next(made)}".encode()).digest()
        return seed, hashlib.sha256(seed).hexdigest()

    monkeypatch.setattr(Game, "new_seed", staticmethod(new_seed))


@pytest.fixture
def make_cornmaze(
    make_user: Callable[..., AbstractBaseUser],
) -> Callable[..., Game]:
    """A Corn maze with people in every seat (or the given bots), started."""

    def make(
        seats: int = 2,
        size: int = 8,
        bots: list[str] | None = None,
        clock: str = "P3D",
        seed: bytes | None = None,
    ):
        """`seed` fixes the game's random draws (the board, who moves first, the bots')."""
        creator = make_user()
        plans = [core.SeatPlan()] + [
            core.SeatPlan(bot=(bots[i - 1] if bots and i - 1 < len(bots) else ""))
            for i in range(1, seats)
        ]
        drawn = Game.new_seed() if seed is None else (seed, hashlib.sha256(seed).hexdigest())
        with core.bot_tasks_paused(), mock.patch.object(Game, "new_seed", lambda: drawn):
            game = core.game_create(
                kind="cornmaze",
                creator=creator,
                options={"size": size},
                clock_choice=clock,
                seats=plans,
            )
            for _ in game.seats.filter(user=None, bot=""):
                core.game_join(game_id=game.pk, user=make_user())
        game.refresh_from_db()
        return game

    return make


def seat_user(game: Game, index: int) -> AbstractBaseUser:
    user = game.seats.get(index=index).user
    assert user is not None
    return user


def to_move(game: Game) -> int:
    game.refresh_from_db()
    assert game.state is not None
    (seat,) = cornmaze.to_move(game.state)
    return seat


def a_legal_move(game: Game) -> list[int]:
    """A legal move for the seat to move that does not end the game, where there is one: tests
    that make a move and look at a running game must not depend on the seed's luck."""
    game.refresh_from_db()
    assert game.state is not None
    seat = to_move(game)
    moves = cornmaze.legal_moves(game.state)
    quiet = (
        m
        for m in moves
        if cornmaze.result(cornmaze.apply(game.state, seat, {"shifts": m})[0]) is None
    )
    return next(quiet, moves[0])


# A seed for games that a test plays to the end (make_cornmaze(seed=FIXED_SEED)): the same
# game every run, so that no test depends on how long a random game lasts.
FIXED_SEED = hashlib.sha256(b"mazesite tests: a game played to the end").digest()


def play_to_the_end(game: Game, limit: int = 500) -> Game:
    """Play the simple bot's moves for whoever is to move until the game ends: a fixed choice
    such as the first legal move can wander for a very long time. The moves are drawn from the
    game's id: give the game FIXED_SEED for the same game every run."""
    rng = random.Random(game.seed_sha256)
    for _ in range(limit):
        game.refresh_from_db()
        if game.status != Game.Status.ACTIVE:
            return game
        seat = to_move(game)
        move = get_bot("cornmaze", "simple")(cornmaze.view(game.state, seat), seat, rng)
        core.move_submit(game_id=game.pk, user=seat_user(game, seat), number=game.ply, move=move)
    raise AssertionError("the game did not end")
