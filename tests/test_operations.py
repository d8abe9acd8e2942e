"""Issue 13's operations parts against the real PostgreSQL and Redis: /metrics' access and
content, the JSON log lines' request id, user and game, the replica router's choices and its
fallback to the primary, and the beat lock (two schedulers, one schedules)."""

from __future__ import annotations

import io
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
import structlog
from django.core.cache import cache
from django.db import connections, transaction
from django.test import Client, RequestFactory

from games.clock import now
from games.models import Game, Move, Outbox, Seat
from games.play import core as services
from games.web import health
from mazesite import beat, dbrouter, logs
from tests.conftest import a_legal_move, seat_user, to_move

pytestmark = pytest.mark.django_db(databases=["default", "replica"])


@pytest.fixture(autouse=True)
def replica_closed() -> Iterator[None]:
    """The "replica" alias is a second connection to the test database: closed after each
    test, or the test database could not be dropped at the end."""
    yield
    connections[dbrouter.REPLICA].close()


# --- /metrics -------------------------------------------------------------------------------


def metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} is not in /metrics")


def test_metrics_are_read_from_allowed_addresses_or_with_the_token_and_hidden_from_others(
    client: Client, settings: Any
) -> None:
    assert client.get("/metrics").status_code == 200  # 127.0.0.1, allowed by default
    settings.METRICS_ALLOWED_NETWORKS = []
    settings.METRICS_TOKEN = "s3cret-token"
    assert client.get("/metrics").status_code == 404
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 404
    assert client.get("/metrics", headers={"Authorization": "s3cret-token"}).status_code == 404
    answer = client.get("/metrics", headers={"Authorization": "Bearer s3cret-token"})
    assert answer.status_code == 200
    assert answer["Cache-Control"] == "no-store"
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics", headers={"Authorization": "Bearer "}).status_code == 404
    # An address is the client's as the limits see it: a forged X-Forwarded-For does not count.
    settings.METRICS_ALLOWED_NETWORKS = [__import__("ipaddress").ip_network("10.0.0.0/8")]
    assert client.get("/metrics", headers={"X-Forwarded-For": "10.1.2.3"}).status_code == 404
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200


def test_metrics_hold_the_sites_gauges_and_djangos(
    client: Client, make_cornmaze: Callable[..., Game]
) -> None:
    game = make_cornmaze()
    seat = to_move(game)
    services.move_submit(
        game_id=game.pk,
        user=seat_user(game, seat),
        number=game.ply,
        move={"shifts": a_legal_move(game)},
    )
    user = seat_user(game, 0)
    Outbox.objects.create(
        kind=Outbox.Kind.YOUR_TURN, user=user, game=game, created_at=now() - timedelta(minutes=5)
    )
    waiting = Seat.objects.filter(game=game, deadline__isnull=False).first()
    assert waiting is not None
    Seat.objects.filter(pk=waiting.pk).update(deadline=now() - timedelta(seconds=90))
    health.worker_heartbeat()
    cache.set(health.sweep_key(), time.time() + 30)  # a node whose clock is ahead
    client.get("/")
    text = client.get("/metrics").content.decode()
    assert metric(text, "mazesite_moves_total") == Move.objects.latest("id").pk
    assert metric(text, "mazesite_outbox_pending") == 1
    assert 300 <= metric(text, "mazesite_outbox_oldest_pending_seconds") < 400
    assert 90 <= metric(text, "mazesite_deadline_sweep_lag_seconds") < 200
    assert metric(text, "mazesite_queue_depth") >= 0
    assert 0 <= metric(text, "mazesite_worker_heartbeat_age_seconds") < 60
    assert metric(text, "mazesite_sweep_age_seconds") == 0
    cache.delete(health.sweep_key())
    assert metric(client.get("/metrics").content.decode(), "mazesite_sweep_age_seconds") == -1
    assert metric(text, "mazesite_scrape_errors") == 0
    assert "django_http_requests_total_by_method_total" in text
    assert "# TYPE mazesite_moves_total counter" in text


# --- logs -----------------------------------------------------------------------------------


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    """The site's log lines as the JSON formatter writes them."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.JSONRenderer(),
            ],
            foreign_pre_chain=logs.SHARED_PROCESSORS,
        )
    )
    root = logging.getLogger()
    root.addHandler(handler)
    old_level = root.level
    root.setLevel(logging.INFO)
    yield out
    root.removeHandler(handler)
    root.setLevel(old_level)


def lines(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines() if line.startswith("{")]


def test_each_log_line_of_a_request_carries_its_request_id_user_and_game(
    client: Client, make_cornmaze: Callable[..., Game], json_log: io.StringIO
) -> None:
    game = make_cornmaze()
    user = seat_user(game, 0)
    client.force_login(user)
    answer = client.get(f"/games/{game.pk}/", headers={"X-Request-ID": "balancer-id-0001"})
    assert answer["X-Request-ID"] == "balancer-id-0001"
    (line,) = [entry for entry in lines(json_log) if entry["event"] == "request"]
    assert line["request_id"] == "balancer-id-0001"
    assert line["user"] == f"{user.pk}:{user.get_username()}"
    assert line["game"] == game.pk
    assert line["status"] == 200 and line["path"] == f"/games/{game.pk}/"
    # A line written by any logger during a request carries the same fields; a request id that
    # is not a sane token is replaced.
    json_log.truncate(0)
    json_log.seek(0)
    answer = client.get(f"/games/{game.pk}/record.json", headers={"X-Request-ID": "bad id\n!"})
    new_id = answer["X-Request-ID"]
    assert new_id != "bad id\n!" and len(new_id) == 32
    assert [e["request_id"] for e in lines(json_log)] == [new_id]
    # After the request, nothing of it is left bound.
    logging.getLogger("games").warning("outside")
    assert "request_id" not in lines(json_log)[-1]


def test_an_anonymous_request_logs_no_user(client: Client, json_log: io.StringIO) -> None:
    client.get("/")
    (line,) = [entry for entry in lines(json_log) if entry["event"] == "request"]
    assert "user" not in line and "game" not in line and line["request_id"]


def test_no_secret_of_a_path_reaches_the_logs(client: Client, json_log: io.StringIO) -> None:
    """A guest's return link, an invite, a calendar feed, an address check, an unsubscribe and
    a password reset carry their secret in the path: the request line and Django's own "Not
    Found" line show the path without it."""
    secrets = {
        "/accounts/calendar/{}.ics": "CalendarSecret0001",
        "/accounts/guest/{}/": "GuestKey0002",
        "/accounts/verify/{}/": "VerifyToken0003",
        "/unsubscribe/{}/": "UnsubscribeToken0004",
        "/games/1/invite/{}/": "InviteToken0005",
        "/accounts/reset/MQ/{}/": "ResetToken0006",
    }
    for shape, secret in secrets.items():
        client.get(shape.format(secret))
    written = json_log.getvalue()
    for secret in secrets.values():
        assert secret not in written
    paths = [e["path"] for e in lines(json_log) if e["event"] == "request"]
    assert paths == [
        "/accounts/calendar/[secret]",
        "/accounts/guest/[secret]/",
        "/accounts/verify/[secret]/",
        "/unsubscribe/[secret]/",
        "/games/1/invite/[secret]/",
        "/accounts/reset/MQ/[secret]/",
    ]
    assert any("Not Found: /accounts/calendar/[secret]" in e["event"] for e in lines(json_log))


# --- the replica router ---------------------------------------------------------------------


@pytest.fixture
def replica(settings: Any) -> Iterator[Callable[..., None]]:
    """Puts the "replica" alias (tests/conftest.py: a second connection to this test database)
    in settings.DATABASES, so that the router uses it; `port` points it somewhere else."""
    connection = connections[dbrouter.REPLICA]
    saved_port = connection.settings_dict["PORT"]

    def add(port: str | None = None) -> None:
        if port is not None:
            connection.close()
            connection.settings_dict["PORT"] = port
            connection.settings_dict["OPTIONS"]["connect_timeout"] = 2
        settings.READ_REPLICA = True

    dbrouter._replica_down_until = 0.0
    yield add
    connection.close()
    connection.settings_dict["PORT"] = saved_port
    connection.settings_dict["OPTIONS"].pop("connect_timeout", None)
    dbrouter._replica_down_until = 0.0


class Queries:
    """The statements each alias ran."""

    def __init__(self) -> None:
        self.by_alias: dict[str, list[str]] = {}

    def watch(self, alias: str) -> Any:
        statements = self.by_alias.setdefault(alias, [])

        def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            statements.append(sql)
            return execute(sql, params, many, context)

        return connections[alias].execute_wrapper(wrapper)


def reads(client: Client, path: str, **kwargs: Any) -> dict[str, list[str]]:
    queries = Queries()
    with queries.watch("default"), queries.watch(dbrouter.REPLICA):
        answer = client.get(path, **kwargs)
    # The replica is a second connection: it does not see this test's transaction, as a
    # replica a second behind would not (a player made in the test is not there yet).
    assert answer.status_code in (200, 404), path
    return queries.by_alias


def test_without_a_replica_everything_reads_from_the_primary(client: Client) -> None:
    request = RequestFactory().get("/archive/")
    assert dbrouter.choose(request) == dbrouter.PRIMARY
    assert dbrouter.ReplicaRouter().db_for_write(Game) == dbrouter.PRIMARY


def test_the_archive_player_pages_and_feeds_read_from_the_replica_and_games_from_the_primary(
    client: Client, replica: Callable[..., None], make_cornmaze: Callable[..., Game]
) -> None:
    replica()
    game = make_cornmaze()
    for path in ("/archive/", "/archive/feed/"):
        queries = reads(client, path)
        assert any("games_game" in q for q in queries[dbrouter.REPLICA]), path
        assert not any("games_game" in q for q in queries["default"]), path
    # A game's page, the lobby, and anything that writes stay on the primary.
    for path in (f"/games/{game.pk}/", "/"):
        queries = reads(client, path)
        assert queries[dbrouter.REPLICA] == [], path
    router = dbrouter.ReplicaRouter()
    assert router.allow_migrate(dbrouter.REPLICA, "games") is False
    token = dbrouter._read_from.set(dbrouter.REPLICA)
    try:
        assert router.db_for_read(Game) == dbrouter.REPLICA
        assert router.db_for_write(Game) == dbrouter.PRIMARY
        with transaction.atomic():
            assert router.db_for_read(Game) == dbrouter.PRIMARY  # in a transaction
    finally:
        dbrouter._read_from.reset(token)


def test_a_client_that_just_wrote_reads_its_writes_from_the_primary(
    client: Client, replica: Callable[..., None], make_cornmaze: Callable[..., Game]
) -> None:
    replica()
    game = make_cornmaze()
    user = seat_user(game, to_move(game))
    client.force_login(user)
    answer = client.post(f"/games/{game.pk}/resign")
    assert answer.status_code < 500
    assert dbrouter.STICKY_COOKIE in answer.cookies
    queries = reads(client, f"/players/{user.get_username()}/")
    assert queries[dbrouter.REPLICA] == []
    client.cookies.pop(dbrouter.STICKY_COOKIE)
    queries = reads(client, f"/players/{user.get_username()}/")
    assert queries[dbrouter.REPLICA] != []


def test_a_players_own_just_finished_game_is_read_from_the_primary(
    replica: Callable[..., None], make_cornmaze: Callable[..., Game], make_user: Any
) -> None:
    replica()
    game = make_cornmaze()
    Game.objects.filter(pk=game.pk).update(status=Game.Status.FINISHED, finished_at=now())
    factory = RequestFactory()

    def choice(user: Any) -> str:
        request = factory.get(f"/games/{game.pk}/replay/")
        request.user = user
        return dbrouter.choose(request)

    assert choice(seat_user(game, 0)) == dbrouter.PRIMARY
    assert choice(make_user()) == dbrouter.REPLICA  # a stranger may read a second behind
    Game.objects.filter(pk=game.pk).update(finished_at=now() - timedelta(minutes=5))
    assert choice(seat_user(game, 0)) == dbrouter.REPLICA


def test_a_replica_that_is_down_sends_reads_to_the_primary(
    client: Client, replica: Callable[..., None], json_log: io.StringIO
) -> None:
    replica("1")  # nothing listens on port 1: refused at once
    queries = Queries()
    with queries.watch("default"):
        answer = client.get("/archive/", headers={"X-Request-ID": "replica-down-01"})
    assert answer.status_code == 200
    assert any("games_game" in q for q in queries.by_alias["default"])
    warning = [e for e in lines(json_log) if "replica failed" in e["event"]]
    assert warning and warning[0]["request_id"] == "replica-down-01"
    # Marked down: the next request does not even try it.
    assert dbrouter.replica_up() is False


def test_a_replica_that_fails_during_the_view_is_left_and_the_view_runs_on_the_primary(
    client: Client, replica: Callable[..., None]
) -> None:
    replica()
    failures: list[str] = []

    def broken(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if "games_game" in sql:
            failures.append(sql)
            from django.db import OperationalError

            raise OperationalError("the replica went away")
        return execute(sql, params, many, context)

    with connections[dbrouter.REPLICA].execute_wrapper(broken):
        answer = client.get("/archive/")
    assert answer.status_code == 200
    assert failures
    assert dbrouter.replica_up() is False


# --- the beat lock --------------------------------------------------------------------------


@pytest.mark.django_db
def test_of_two_beats_one_holds_the_lock_and_the_other_takes_it_when_the_first_goes() -> None:
    name = f"test-{uuid.uuid4().hex}"
    first, second = beat.BeatLock(name), beat.BeatLock(name)
    try:
        assert first.postgres
        assert first.holding() is True
        assert second.holding() is False
        assert first.holding() is True  # still held: checked on its connection
        first.release()  # the first beat stops: its lock is free when release returns
        assert second.holding() is True
        assert first.holding() is False
    finally:
        first.release()
        second.release()


@pytest.mark.django_db
def test_a_beat_without_the_lock_schedules_nothing(tmp_path: Any, settings: Any) -> None:
    from mazesite.celery import app

    holder = beat.BeatLock(settings.CELERY_TASK_DEFAULT_QUEUE)
    assert holder.holding()
    sent: list[Any] = []
    try:
        scheduler = beat.LockedScheduler(
            app=app, schedule_filename=str(tmp_path / "schedule"), lazy=True
        )
        scheduler.apply_async = lambda *a, **k: sent.append(a)  # type: ignore[method-assign]
        assert scheduler.tick() == beat.LOCK_RETRY_SECONDS
        assert sent == []
        holder.release()
        scheduler.setup_schedule()
        assert scheduler.tick() != beat.LOCK_RETRY_SECONDS or sent
        assert scheduler.beat_lock.holding()
    finally:
        holder.release()
        scheduler.close()


# --- the settings ---------------------------------------------------------------------------


def test_the_connection_settings_say_what_is_wrong() -> None:
    from tests.test_settings import manage

    postgres = "postgres://postgres@127.0.0.1:5432/mazesite"
    result = manage("check", DB_POOL="1", CONN_MAX_AGE="600", DATABASE_URL=postgres)
    assert result.returncode != 0 and "DB_POOL=1 needs CONN_MAX_AGE=0" in result.stderr
    result = manage("check", DB_POOL="1", DATABASE_URL="sqlite:////tmp/x.sqlite3")
    assert result.returncode != 0 and "DB_POOL=1 needs PostgreSQL" in result.stderr
    result = manage("check", METRICS_ALLOWED_IPS="10.0.0.0/33")
    assert result.returncode != 0 and "METRICS_ALLOWED_IPS" in result.stderr
    show = (
        "from django.conf import settings as s; "
        "print(s.DATABASES['default']['OPTIONS']['pool'], s.READ_REPLICA, "
        "sorted(s.DATABASES), s.DATABASES['replica']['TEST'])"
    )
    result = manage(
        "shell",
        "-c",
        show,
        DB_POOL="1",
        DATABASE_URL=postgres,
        REPLICA_DATABASE_URL=postgres.replace("5432", "5433"),
    )
    assert result.returncode == 0, result.stderr
    assert "'max_size': 8" in result.stdout
    assert "True ['default', 'replica'] {'MIRROR': 'default'" in result.stdout
