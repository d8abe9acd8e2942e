"""A request that fails (a 500, a 429 from the limits, a 400 that no page takes, no answer)
keeps the board and says so in the page's error line, which a good request clears; no error
page is ever swapped in."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.urls import reverse
from playwright.sync_api import Page, Route, expect

from games.ui.cornmaze import column_letter as letter
from tests.conftest import a_legal_move, seat_user, to_move

ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"


def sign_in(page: Page, username: str) -> None:
    page.goto(reverse("login"))
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill("a-long-passphrase")  # make_user's
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("header .whoami")).to_have_text(username)


def play(page: Page, game) -> None:
    """Choose this turn's move (one that does not end the game) and press Play."""
    first, second = a_legal_move(game)
    form = page.locator("#move-form")
    form.locator(f"input[name=first][value={letter(first)}]").check()
    form.locator(f"input[name=second][value={letter(second)}]").check()
    form.get_by_role("button", name="Play").click()


def test_a_failed_move_keeps_the_board_and_says_why(
    new_page: Callable[[], Page], make_cornmaze, settings
) -> None:
    # One move an hour for each seat: this page's second move is one too many.
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "move_seat": "1/h"}
    game = make_cornmaze()
    mover = to_move(game)
    pages = {}
    for seat in (mover, 1 - mover):
        pages[seat] = new_page()
        sign_in(pages[seat], seat_user(game, seat).get_username())
        pages[seat].goto(reverse("game", args=[game.pk]))
    page, other = pages[mover], pages[1 - mover]
    error = page.locator("#request-error")
    move_url = f"**{reverse('game_move', args=[game.pk])}"

    # The server fails (as Django's debug page would come back under `make run`).
    def fail(route: Route) -> None:
        route.fulfill(status=500, content_type="text/html", body="<h1>Server Error (500)</h1>")

    page.route(move_url, fail)
    play(page, game)
    expect(error).to_contain_text("The server failed to answer (error 500)")
    expect(page.locator("#board")).to_be_visible()
    expect(page.locator("#move-form")).to_be_visible()
    expect(page.locator("text=Server Error (500)")).to_have_count(0)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "failed-move-500.png", full_page=True)

    # The server back: the same move goes through (the failed one never reached it, nor
    # counted), and the line clears.
    page.unroute(move_url)
    play(page, game)
    page.locator("#log li[value='1']").wait_for()
    expect(error).to_be_empty()

    # A limit: the server's own sentence shows, and the board stays.
    game.refresh_from_db()
    play(other, game)
    page.locator("#log li[value='2']").wait_for()  # by polling
    page.locator("#move-form").wait_for()
    game.refresh_from_db()
    play(page, game)
    expect(error).to_contain_text("Too many moves in a short time")
    expect(error).to_contain_text("Try again in")
    expect(page.locator("#move-form")).to_be_visible()
    expect(page.locator("#log li")).to_have_count(2)
    page.screenshot(path=ARTIFACTS / "failed-move-429.png", full_page=True)

    # No answer at all (the server gone): the page says so and keeps polling.
    page.route(f"**{reverse('game', args=[game.pk])}?since=*", lambda route: route.abort())
    expect(error).to_contain_text("The server cannot be reached")
    page.unroute(f"**{reverse('game', args=[game.pk])}?since=*")
    expect(error).to_be_empty()
    expect(page.locator("#board")).to_be_visible()

    # A request no page takes (a NUL in it, 400 before any view): the server's sentence shows.
    def with_nul(route: Route) -> None:
        route.continue_(post_data=(route.request.post_data or "") + "&note=%00")

    page.route(move_url, with_nul)
    play(page, game)
    expect(error).to_contain_text("This request holds a NUL character")
    expect(page.locator("#move-form")).to_be_visible()
    expect(page.locator("#log li")).to_have_count(2)
