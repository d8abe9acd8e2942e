"""A username may be one word of 150 letters: every page that names its player breaks the name
rather than grow wider than the window, on a desktop and on a phone."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from games.archive.ratings import ratings_recompute
from games.play import core
from tests.browser.test_ratings_browser import sign_in
from tests.test_archive import bulk_finished
from tests.worker_fixtures import make_game, make_player

pytestmark = pytest.mark.browser

LONG = "L" + "x" * 149


def overflow(page: Page, path: str) -> list[tuple[int, int]]:
    """For each width, (the width, the page's width) where the page is wider than the window."""
    wider = []
    for width in (1280, 375):
        page.set_viewport_size({"width": width, "height": 800})
        page.goto(path)
        page.locator("main").wait_for()
        scroll = page.evaluate("document.documentElement.scrollWidth")
        if scroll > width:
            wider.append((width, scroll))
    return wider


def test_a_150_letter_name_never_widens_a_page(new_page):
    long, bob = make_player(LONG), make_player("bob")
    bulk_finished(5, [long, bob], winner=0)  # results, the archive and a leaderboard place
    ratings_recompute()
    running = make_game(long, bob)
    setting_up = core.game_create(
        kind="robotmaze",
        creator=long,
        options={},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan(bot="strong")],
    )
    open_game = core.game_create(
        kind="cornmaze",
        creator=long,
        options={"size": 8},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
    )
    page = new_page()
    sign_in(page, LONG)
    paths = [
        "/",
        f"/players/{LONG}/",
        f"/archive/?player={LONG}",
        "/leaderboard/cornmaze/",
        "/accounts/",
        running.get_absolute_url(),
        setting_up.get_absolute_url(),
        open_game.get_absolute_url(),
    ]
    assert LONG in page.content()
    wider = {path: found for path in paths if (found := overflow(page, path))}
    assert not wider
    # What is not a name keeps to one line: the long name breaks, not the Replay link.
    for width in (1280, 375):
        page.set_viewport_size({"width": width, "height": 800})
        page.goto(f"/players/{LONG}/")
        links = page.locator("table.archive-games .replay-link")
        assert links.count() == 5
        lines = links.evaluate_all("links => links.map(a => a.getClientRects().length)")
        assert lines == [1] * 5, (width, lines)
