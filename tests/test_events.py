"""Live races by Server-Sent Events (mazesite/events.py, games/live.py): a real uvicorn in the
test process, the test database and Redis. A committed step is published on the race channel
and reaches the connected clients: a runner is told only the version, a spectator gets the
spectator's board, which shows nothing a spectator may not see. Reconnecting with
Last-Event-ID resyncs; an ended race says `end` and closes; past the limit, 503; bad requests
get a clear 4xx."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import redis
from django.conf import settings
from django.test import Client
from hypothesis import HealthCheck, given
from hypothesis import settings as settings_hypothesis
from hypothesis import strategies as st

from games import live
from games.models import Game
from games.play import core
from tests.events_fixtures import EventsServer, Stream, serving_events, subscribed_wait
from tests.redis_fixtures import OwnRedis, own_redis_server
from tests.test_mazerace_site import an_open_way, client_for, make_race, ready_all, step, user_of
from tests.worker_fixtures import make_player, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

HTMX = {"HTTP_HX_REQUEST": "true"}


def running_race() -> Game:
    game = make_race(2)
    ready_all(game)
    assert game.race_starts_at is not None
    wait_until(lambda: datetime.now(UTC) >= game.race_starts_at, timeout=10, what="the start")
    return game


def test_a_committed_step_reaches_a_runner_and_a_spectator(events_server: EventsServer) -> None:
    game = running_race()
    path = f"/games/{game.pk}/events"
    runner = Stream(events_server.port, f"{path}?as=runner&v={game.version}")
    watcher = Stream(events_server.port, f"{path}?as=watch&v={game.version}")
    for stream in (runner, watcher):
        assert stream.status == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        assert stream.headers["access-control-allow-origin"] == "*"
        assert stream.headers["cache-control"] == "no-store"

    step(game, 1, an_open_way(game, 1))
    game.refresh_from_db()

    said = runner.event()
    # A runner is told the version only, and fetches its own board (with its own fog).
    assert said == {"id": str(game.version), "event": "version", "data": {"v": game.version}}

    board = watcher.event()
    assert board["event"] == "board" and board["id"] == str(game.version)
    assert set(board["data"]) == {"v", "html"} and board["data"]["v"] == game.version
    html = board["data"]["html"]
    assert html.startswith('<section id="game"') and f'data-version="{game.version}"' in html
    assert "1 step" in html  # the strip: runner 1 has stepped
    # Hidden information: nothing of the maze, no runner's cell, no steering.
    for secret in ('data-cell="', "data-open", 'id="steer"', 'id="maze-board"'):
        assert secret not in html
    # ... which a runner's own board has: the test would see a leak.
    own = client_for(user_of(game, 1)).get(f"/games/{game.pk}/", **HTMX).content.decode()
    assert 'data-cell="' in own and 'id="steer"' in own
    # The board is the one any spectator's page gets.
    anonymous = Client().get(f"/games/{game.pk}/", **HTMX).content.decode()

    def strip(page: str) -> str:
        return page.split('<ol class="strip"')[1].split("</ol>")[0]

    assert strip(anonymous) == strip(html)
    assert f'data-events="/games/{game.pk}/events?as=watch"' in anonymous
    runner.close()
    watcher.close()


def test_a_reconnecting_client_is_sent_what_it_missed(events_server: EventsServer) -> None:
    game = running_race()
    seen = game.version
    step(game, 1, an_open_way(game, 1))
    game.refresh_from_db()
    path = f"/games/{game.pk}/events?as=runner&v=0"
    # Last-Event-ID (what the browser sends when it reconnects) wins over `v`.
    behind = Stream(events_server.port, path, {"Last-Event-ID": str(seen)})
    assert behind.event()["data"] == {"v": game.version}
    up_to_date = Stream(events_server.port, path, {"Last-Event-ID": str(game.version)})
    time.sleep(0.3)  # it would have been sent by now
    step(game, 0, an_open_way(game, 0))
    game.refresh_from_db()
    # The first event it gets is the new step's: nothing was sent for the version it had.
    assert up_to_date.event()["data"] == {"v": game.version}
    behind.close()
    up_to_date.close()


def test_a_race_that_ends_says_end_and_closes(events_server: EventsServer) -> None:
    game = running_race()
    watcher = Stream(events_server.port, f"/games/{game.pk}/events?as=watch&v={game.version}")
    runner = Stream(events_server.port, f"/games/{game.pk}/events?as=runner&v={game.version}")
    core.game_resign(game_id=game.pk, user=user_of(game, 1))
    core.game_resign(game_id=game.pk, user=user_of(game, 0))
    game.refresh_from_db()
    assert game.is_over
    events = until_end(watcher)
    # The last board is the results (the maze is public once the race is over).
    assert events[-1]["event"] == "board" and events[-1]["data"]["v"] == game.version
    assert "data-events" not in events[-1]["data"]["html"]
    assert 'id="results"' in events[-1]["data"]["html"]
    assert watcher.closed()
    assert until_end(runner)[-1]["data"] == {"v": game.version}
    assert runner.closed()
    # A stream opened on a race that is over ends at once.
    late = Stream(events_server.port, f"/games/{game.pk}/events?as=runner&v={game.version}")
    assert late.event()["event"] == "end" and late.closed()


def until_end(stream: Stream) -> list[dict]:
    events = []
    for _ in range(10):
        event = stream.event()
        if event["event"] == "end":
            return events
        events.append(event)
    raise AssertionError(f"no end: {events}")


def test_past_the_limit_a_stream_is_refused_and_the_page_polls(
    events_server: EventsServer, settings
) -> None:
    game = running_race()
    settings.SSE_MAX_CONNECTIONS = 1
    first = Stream(events_server.port, f"/games/{game.pk}/events?as=watch")
    assert first.status == 200
    second = Stream(events_server.port, f"/games/{game.pk}/events?as=watch")
    assert second.status == 503
    first.close()
    second.close()


@pytest.mark.parametrize(
    ("path", "method", "status"),
    [
        ("/games/x/events", "GET", 404),
        ("/games/1/events/more", "GET", 404),
        ("/", "GET", 404),
        ("/games/1/events?as=admin", "GET", 400),
        ("/games/1/events", "POST", 405),
    ],
)
def test_bad_requests_get_a_clear_answer(
    events_server: EventsServer, path: str, method: str, status: int
) -> None:
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", events_server.port, timeout=10)
    connection.request(method, path)
    response = connection.getresponse()
    assert response.status == status
    assert response.read().decode()  # a sentence, never an empty 500
    connection.close()


def test_healthz_says_whether_the_process_listens(events_server: EventsServer) -> None:
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", events_server.port, timeout=10)
    connection.request("GET", "/healthz")
    response = connection.getresponse()
    assert (response.status, response.read()) == (200, b"ok: 0 viewers")
    connection.close()


def _status(events_server: EventsServer, path: str) -> tuple[int, str]:
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", events_server.port, timeout=10)
    connection.request("GET", path)
    response = connection.getresponse()
    status = response.status
    body = response.read().decode() if status != 200 else ""
    connection.close()
    return status, body


def test_only_a_live_race_that_anyone_may_see_has_a_stream(
    events_server: EventsServer, make_cornmaze
) -> None:
    """A game that does not exist, a game that is not a live race, and a private race waiting
    for players (whose page a stranger is not shown) have no stream: 404, as the page."""
    users = [make_player(), make_player()]
    with core.bot_tasks_paused():
        private = core.game_create(
            kind="mazerace",
            creator=users[0],
            options={"mode": "live"},
            clock_choice="live",
            seats=[core.SeatPlan(), core.SeatPlan()],
            invite=True,
        )
    slow = make_race(2, clock="P3D")
    for game_id in (999999, make_cornmaze().pk, slow.pk, private.pk):
        for mode in ("watch", "runner"):
            status, body = _status(events_server, f"/games/{game_id}/events?as={mode}")
            assert (status, body) == (404, "There is no event stream here."), game_id
    assert Client().get(f"/games/{private.pk}/").status_code == 404
    # Its creator's page polls while it waits: it names no stream.
    page = client_for(users[0]).get(f"/games/{private.pk}/").content.decode()
    assert 'id="game"' in page and "data-events" not in page
    # Started, it is watched as any game.
    with core.bot_tasks_paused():
        core.game_join(game_id=private.pk, user=users[1], token=private.invite_token)
    page = client_for(users[0]).get(f"/games/{private.pk}/").content.decode()
    assert f'data-events="/games/{private.pk}/events?as=runner"' in page
    watcher = Stream(events_server.port, f"/games/{private.pk}/events?as=watch")
    assert watcher.status == 200
    assert watcher.event()["event"] == "board"
    watcher.close()


def test_a_transaction_is_published_once_at_its_last_version_after_commit() -> None:
    game = running_race()
    client = redis.Redis.from_url(settings.REDIS_URL)
    pubsub = client.pubsub()
    pubsub.subscribe(live.channel())
    assert pubsub.get_message(timeout=2)["type"] == "subscribe"
    from django.db import transaction

    with transaction.atomic():
        game.refresh_from_db()
        game.version += 1
        live.publish_on_commit(game)
        game.version += 1
        live.publish_on_commit(game)
        assert pubsub.get_message(timeout=0.2) is None  # nothing before the commit
    message = pubsub.get_message(timeout=2)
    said = json.loads(message["data"])
    assert (said["g"], said["v"], said["over"]) == (game.pk, game.version, False)
    assert set(said) == {"g", "v", "over", "t"}  # nothing any viewer may not see
    assert pubsub.get_message(timeout=0.3) is None
    # The channel carries the site's (here the test worker's) queue name.
    assert live.channel().startswith(settings.CELERY_TASK_DEFAULT_QUEUE + ":")
    pubsub.close()
    client.close()


@settings_hypothesis(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    game_id=st.integers(min_value=10**6, max_value=10**12 - 1),
    mode=st.sampled_from(["watch", "runner", "", "Watch", "x" * 50]),
    version=st.text(max_size=20),
    last=st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=20),
)
def test_any_query_or_last_event_id_gets_an_answer_never_a_500(
    events_server: EventsServer, game_id: int, mode: str, version: str, last: str
) -> None:
    from urllib.parse import urlencode

    query = urlencode({"as": mode, "v": version})
    stream = Stream(events_server.port, f"/games/{game_id}/events?{query}", {"Last-Event-ID": last})
    try:
        if mode in {"watch", "runner", ""}:  # none said: a spectator's stream
            assert stream.status == 404  # no such game
        else:
            assert stream.status == 400
    finally:
        stream.close()


@pytest.fixture
def own_redis(settings) -> Iterator[OwnRedis]:
    """A redis-server of this test's own as the site's REDIS_URL for the race channel: what the
    events server subscribes to and the write path publishes on (the cache and the broker stay
    on the shared Redis)."""
    with own_redis_server() as own:
        settings.REDIS_URL = own.url
        live._local.__dict__.clear()  # this thread's publishing client was for the shared Redis
        try:
            yield own
        finally:
            live._local.__dict__.clear()


def test_after_redis_restarts_an_open_stream_gets_what_was_published_meanwhile(
    own_redis: OwnRedis, transactional_db: None
) -> None:
    with serving_events() as events_server:
        game = running_race()
        path = f"/games/{game.pk}/events"
        runner = Stream(events_server.port, f"{path}?as=runner&v={game.version}")
        watcher = Stream(events_server.port, f"{path}?as=watch&v={game.version}")
        from mazesite import events

        # Both have joined (and were sent nothing: they are up to date).
        wait_until(lambda: events.stats()["viewers"] == 2, timeout=10, what="the two streams")

        own_redis.stop()
        # A step while Redis is down: committed, its version never published.
        step(game, 1, an_open_way(game, 1))
        game.refresh_from_db()
        own_redis.start()
        subscribed_wait()  # the events process subscribed again by itself

        # Nothing more is published: the events process read the version it missed.
        assert runner.event()["data"] == {"v": game.version}
        board = watcher.event()
        assert board["event"] == "board" and board["data"]["v"] == game.version
        assert "1 step" in board["data"]["html"]

        # And it listens again: the next step reaches both through the channel.
        step(game, 0, an_open_way(game, 0))
        game.refresh_from_db()
        assert runner.event()["data"] == {"v": game.version}
        assert watcher.event()["data"]["v"] == game.version
        runner.close()
        watcher.close()


def test_a_subscription_that_goes_silent_is_dropped_and_made_again(
    own_redis: OwnRedis, transactional_db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Redis that keeps the connection but answers nothing (here paused; a host gone
    without a word) does not leave the events process deaf: its ping goes unanswered, it
    subscribes again on a new connection."""
    from mazesite import events

    monkeypatch.setattr(events, "LISTEN_PING_SECONDS", 0.2)
    client = redis.Redis(port=own_redis.port)

    def subscriber() -> set[str]:
        return {c["id"] for c in client.client_list() if int(c.get("sub", 0)) > 0}

    with serving_events():
        before = subscriber()
        assert len(before) == 1
        # Every command waits 2 s, the pings' answers too: 10 pings' time.
        client.execute_command("CLIENT", "PAUSE", "2000", "ALL")
        wait_until(
            lambda: len(subscriber()) == 1 and subscriber() != before,
            timeout=15,
            what="a new subscription",
        )
    client.close()
