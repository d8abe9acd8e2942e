"""Live races by Server-Sent Events in Chromium: a spectator's and a runner's pages follow a
live race through the event stream of a real uvicorn (mazesite/events.py, another origin than
the site's, as under `make run`), and while it is open neither page polls. Without EventSource,
or with the events server refusing, the pages poll as before."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from django.conf import settings as django_settings
from playwright.sync_api import Page, Request, expect

from games.models import Game
from tests.events_fixtures import EventsServer
from tests.test_mazerace_site import an_open_way, client_for, make_race, ready_all, step, user_of
from tests.worker_fixtures import wait_until

pytestmark = pytest.mark.browser


@pytest.fixture
def events_on(events_server: EventsServer, settings) -> EventsServer:
    """The site's pages point at the events server, and their policy lets them read it."""
    settings.RACE_EVENTS_ORIGIN = events_server.origin
    policy = copy.deepcopy(django_settings.CONTENT_SECURITY_POLICY)
    policy["DIRECTIVES"]["connect-src"] = ["'self'", events_server.origin]
    settings.CONTENT_SECURITY_POLICY = policy
    return events_server


class Traffic:
    """What a page asks the site and the events server."""

    def __init__(self, page: Page, game: Game) -> None:
        self.polls: list[str] = []
        self.fetches: list[str] = []
        self.streams: list[str] = []
        self.game = game
        page.on("request", self.seen)

    def seen(self, request: Request) -> None:
        url = request.url
        if f"/games/{self.game.pk}/events" in url:
            self.streams.append(url)
        elif f"/games/{self.game.pk}/?since=" in url:
            (self.fetches if "via=sse" in url else self.polls).append(url)


def seen(page: Page, check: Callable[[], bool], what: str) -> None:
    """Until `check` holds: Playwright hands the test its pages' events only while the test
    waits in a Playwright call, hence the page's own wait."""
    for _ in range(100):
        if check():
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"timed out waiting for {what}")


def running_race() -> Game:
    game = make_race(2)
    ready_all(game)
    assert game.race_starts_at is not None
    wait_until(lambda: datetime.now(UTC) >= game.race_starts_at, timeout=10, what="the start")
    return game


def has_landed(game: Game, seat: int) -> bool:
    game.refresh_from_db()
    assert game.state is not None and game.race_starts_at is not None
    landed = game.state["runners"][seat]["landed_ms"]
    race_ms = (datetime.now(UTC) - game.race_starts_at).total_seconds() * 1000
    return landed is not None and race_ms > landed


def steps_shown(page: Page, seat: int, steps: int) -> None:
    word = "step" if steps == 1 else "steps"
    expect(page.locator(f"#strip li[data-seat='{seat}'] .steps")).to_have_text(f"{steps} {word}")


def signed_in(page: Page, game: Game, seat: int, live_server) -> None:
    session = client_for(user_of(game, seat)).cookies[django_settings.SESSION_COOKIE_NAME]
    page.context.add_cookies(
        [{"name": session.key, "value": session.value, "url": live_server.url}]
    )


def test_a_live_race_updates_by_sse_and_the_pages_stop_polling(
    new_page, live_server, events_on: EventsServer
) -> None:
    game = running_race()
    spectator = new_page()
    watching = Traffic(spectator, game)
    spectator.goto(f"/games/{game.pk}/")
    runner = new_page()
    signed_in(runner, game, 0, live_server)
    running = Traffic(runner, game)
    runner.goto(f"/games/{game.pk}/")
    expect(runner.locator("#steer")).to_be_visible()
    seen(runner, lambda: bool(watching.streams and running.streams), "both pages' streams")
    assert "as=watch" in watching.streams[0] and "as=runner" in running.streams[0]
    assert all(url.startswith(events_on.origin) for url in watching.streams + running.streams)

    step(game, 1, an_open_way(game, 1))
    steps_shown(spectator, 1, 1)
    steps_shown(runner, 1, 1)
    # From here on the streams are open: count what each page asks the site.
    watching.polls.clear()
    running.polls.clear()
    running.fetches.clear()
    for steps in (2, 3):
        # A step is refused while the last one has not landed (at its `landed_ms`, which it
        # gets when it is accepted): wait for the race's clock to pass it.
        wait_until(lambda: has_landed(game, 1), timeout=5, what="the step to land")
        step(game, 1, an_open_way(game, 1))
        steps_shown(spectator, 1, steps)
        steps_shown(runner, 1, steps)
    # Two updates delivered and several poll intervals (500 ms) gone by: not one poll. The
    # spectator asked the site nothing (its board came in the event); the runner fetched its
    # own board when the stream said the race moved.
    spectator.wait_for_timeout(1500)
    assert watching.polls == [] and running.polls == []
    assert running.fetches
    assert len(watching.streams) == 1 and len(running.streams) == 1  # never reconnected
    game.refresh_from_db()
    expect(spectator.locator("#game")).to_have_attribute("data-version", str(game.version))
    # The spectator's board never shows a runner's cell.
    assert spectator.locator(".runner[data-cell]").count() == 0
    assert runner.locator(".runner[data-runner='0'][data-cell]").count() == 1


@pytest.mark.parametrize("how", ["no EventSource", "the events server refuses"])
def test_without_the_stream_the_pages_poll(
    new_page, live_server, events_on: EventsServer, settings, how: str
) -> None:
    game = running_race()
    page = new_page()
    if how == "no EventSource":
        page.add_init_script("delete window.EventSource;")
    else:
        settings.SSE_MAX_CONNECTIONS = 0  # every stream answered 503
    traffic = Traffic(page, game)
    page.goto(f"/games/{game.pk}/")
    step(game, 1, an_open_way(game, 1))
    steps_shown(page, 1, 1)
    seen(page, lambda: len(traffic.polls) >= 3, "the page to poll")
    assert traffic.fetches == []
    if how == "no EventSource":
        assert traffic.streams == []
    else:
        assert len(traffic.streams) == 1  # refused once: no reconnecting, the page polls
