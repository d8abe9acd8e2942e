"""Playwright fixtures for browser tests: one headless Chromium per test session, and a
`new_page` factory that opens a fresh browser context (its own cookies: another person) per call,
on pytest-django's live server. When a test fails, every page it opened is saved as a screenshot
in test-artifacts/."""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from django.conf import settings

from tests.conftest import unavailable

if TYPE_CHECKING:
    from games.models import Game

# Playwright's sync API runs an event loop in the test thread; Django's ORM must still be usable.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

playwright_sync = pytest.importorskip("playwright.sync_api")

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"
TIMEOUT_MS = 10_000


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    # Kept on the item so that fixtures can tell, at teardown, whether the test failed.
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


class RequestsInFlight:
    """The live server's WSGI application, wrapped to count the requests it is answering.

    A page's poll can still be on the server when its test ends and closes the browser; if it
    ran on, it would meet the next test's database (or none: a 500 whose traceback, printed
    while another thread parses Python with `ast`, trips CPython 3.11's thread-unsafe AST
    constructor). Each browser test therefore waits, before its database is torn down, until
    the server has answered everything it was asked."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.count = 0
        self.changed = threading.Condition()

    def __call__(
        self, environ: dict[str, object], start_response: Callable[..., object]
    ) -> list[bytes]:
        with self.changed:
            self.count += 1
        try:
            response = self.app(environ, start_response)
            try:
                return list(response)  # the whole body, so the request is over when this returns
            finally:
                close = getattr(response, "close", None)
                if close is not None:
                    close()
        finally:
            with self.changed:
                self.count -= 1
                self.changed.notify_all()

    def wait_until_idle(self, timeout: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.count == 0, timeout=timeout)


@pytest.fixture(autouse=True)
def live_server_drained(
    live_server, browser: playwright_sync.Browser, transactional_db: None
) -> Iterator[None]:
    """Every browser test ends with its browser contexts closed and the live server idle (see
    RequestsInFlight); as an autouse fixture it is torn down after the test's own fixtures
    (which close their contexts, after a failure's screenshots), and before transactional_db
    empties the database. A context a test left open would go on asking the live server (a
    poll, a replay playing) during the tests after it, whose database it may not touch: each
    such request logged a 500's traceback from the server's thread, and Python 3.11's
    traceback parses source (ast) in a way that can break an ast.parse in the main thread at
    the same moment ("AST constructor recursion depth mismatch")."""
    httpd = live_server.thread.httpd
    app = httpd.get_app()
    if not isinstance(app, RequestsInFlight):
        app = RequestsInFlight(app)
        httpd.set_app(app)
    yield
    for context in list(browser.contexts):
        context.close()
    assert app.wait_until_idle(timeout=30), f"{app.count} requests still on the live server"


@pytest.fixture(scope="session")
def browser() -> Iterator[playwright_sync.Browser]:
    if not Path(CHROMIUM).exists():
        unavailable(f"no Chromium at {CHROMIUM} (set CHROMIUM to its path)")
    with playwright_sync.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def new_page(
    browser: playwright_sync.Browser,
    live_server,
    transactional_db: None,
    request: pytest.FixtureRequest,
) -> Iterator[Callable[[], playwright_sync.Page]]:
    """Call it for a page in a new browser context; `page.goto("/path")` is on the live server."""
    contexts: list[playwright_sync.BrowserContext] = []

    def make() -> playwright_sync.Page:
        context = browser.new_context(base_url=live_server.url)
        context.set_default_timeout(TIMEOUT_MS)
        contexts.append(context)
        return context.new_page()

    yield make

    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        ARTIFACTS.mkdir(exist_ok=True)
        name = re.sub(r"[^\w.-]+", "_", request.node.nodeid.split("::", 1)[-1])
        for i, context in enumerate(contexts):
            for j, page in enumerate(context.pages):
                # A page that is gone has nothing to show.
                with contextlib.suppress(playwright_sync.Error):
                    page.screenshot(path=ARTIFACTS / f"{name}-{i}-{j}.png", full_page=True)
    for context in contexts:
        context.close()


def corn_maze_of_two(
    creator: playwright_sync.Page, joiner: playwright_sync.Page
) -> tuple[Game, playwright_sync.Page, playwright_sync.Page]:
    """A 6x6 Corn maze that `creator` makes (taking the first seat) and `joiner` joins from the
    lobby, each then on its page: (the game as it started, the page of the player to move, the
    other's)."""
    from games.engines import cornmaze
    from games.models import Game

    creator.goto("/new/cornmaze/")
    creator.fill("input[name=size]", "6")
    creator.click("text=Create the game")
    creator.wait_for_url("**/games/*/")
    game = Game.objects.get()
    joiner.goto("/")
    joiner.locator("#open-games").get_by_role("button", name="Join").click()
    joiner.wait_for_url(f"**/games/{game.pk}/")
    game.refresh_from_db()
    assert game.state is not None
    (seat,) = cornmaze.to_move(game.state)
    mover, other = (creator, joiner) if seat == 0 else (joiner, creator)
    return game, mover, other
