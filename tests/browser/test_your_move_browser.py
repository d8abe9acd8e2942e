"""Your turn, visible: two guests in separate browsers start a Corn maze; when one moves, the
other's lobby, left open, refreshes its "your games" by itself and its tab title starts with
"(1) "."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.browser.conftest import corn_maze_of_two
from tests.conftest import a_legal_move


def letter(col: int) -> str:
    return chr(ord("a") + col)


def test_the_other_players_lobby_title_counts_their_move_after_a_move(new_page, settings):
    settings.LOBBY_POLL_EVERY = "1s"  # the lobby's poll, 20 s on the site
    game, mover, other = corn_maze_of_two(new_page(), new_page())
    url = f"/games/{game.pk}/"
    # The other player waits in the lobby: not their move, no count.
    other.goto("/")
    expect(other).to_have_title("Lobby · mazesite")
    expect(other.locator("#your-move")).to_have_count(0)
    expect(other.locator("#favicon")).to_have_attribute("href", re.compile(r"/favicon\.svg$"))
    expect(other.locator("#your-games")).to_contain_text("waiting for the other player")

    mover.goto(url)
    expect(mover).to_have_title(re.compile(r"^\(1\) "))
    first, second = a_legal_move(game)
    form = mover.locator("#move-form")
    form.locator(f"input[name=first][value={letter(first)}]").check()
    form.locator(f"input[name=second][value={letter(second)}]").check()
    form.get_by_role("button", name="Play").click()
    mover.locator("#log li[value='1']").wait_for()

    # The other's lobby learns it by polling, without a reload: the title, the header, the row.
    expect(other).to_have_title(re.compile(r"^\(1\) Lobby · mazesite$"))
    expect(other.locator("#your-move")).to_have_text("Your move: 1")
    expect(other.locator("#favicon")).to_have_attribute("href", re.compile("favicon-your-move"))
    expect(other.locator("#your-games .your-move")).to_have_count(1)
    # The mover's own count is gone with their move.
    mover.goto("/")
    expect(mover).to_have_title("Lobby · mazesite")


def test_a_game_pages_header_title_and_icon_follow_its_turn(new_page):
    """On the game's own page, without a reload: the mover's "Your move: 1", its "(1) " title
    and the icon's badge go with its move (the answer), and come to the other player's page with
    its poll; and back with the other's move."""
    game, mover, other = corn_maze_of_two(new_page(), new_page())

    def counts(page: Page, n: int) -> None:
        if n:
            expect(page).to_have_title(re.compile(rf"^\({n}\) Corn maze #{game.pk} · mazesite$"))
            expect(page.locator("#your-move")).to_have_text(f"Your move: {n}")
            expect(page.locator("#favicon")).to_have_attribute("href", re.compile("your-move"))
        else:
            expect(page).to_have_title(f"Corn maze #{game.pk} · mazesite")
            expect(page.locator("#your-move")).to_have_count(0)
            expect(page.locator("#favicon")).to_have_attribute(
                "href", re.compile(r"/favicon(\.[0-9a-f]+)?\.svg$")
            )

    counts(mover, 1)
    counts(other, 0)
    for ply, (player, waiting) in enumerate([(mover, other), (other, mover)], start=1):
        game.refresh_from_db()
        first, second = a_legal_move(game)
        form = player.locator("#move-form")
        form.locator(f"input[name=first][value={letter(first)}]").check()
        form.locator(f"input[name=second][value={letter(second)}]").check()
        form.get_by_role("button", name="Play").click()
        player.locator(f"#log li[value='{ply}']").wait_for()
        counts(player, 0)
        waiting.locator(f"#log li[value='{ply}']").wait_for()  # by its poll
        counts(waiting, 1)


def test_the_header_keeps_to_one_line_with_a_long_name_and_a_move_waiting(new_page, make_cornmaze):
    from django.contrib.auth.models import User

    from tests.browser.test_failed_requests_browser import ARTIFACTS, sign_in
    from tests.conftest import seat_user, to_move

    game = make_cornmaze()
    long_name = "Alexandrina_of_the_Extraordinarily_Long_Name"
    User.objects.filter(pk=seat_user(game, to_move(game)).pk).update(username=long_name)
    page = new_page()
    page.set_viewport_size({"width": 1280, "height": 800})
    sign_in(page, long_name)
    page.goto("/")
    expect(page.locator("#your-move")).to_have_text("Your move: 1")
    # At 1280 px the whole header is one line (the name cut short); narrower, each group of
    # links stays on one line: the site's, and the account's (under it if both do not fit).
    whole = "header .brand, header #your-move, header nav.site > *, header nav.account > *"
    for width, groups in (
        (1280, (whole,)),
        (1000, ("header nav.site > *", "header nav.account > *")),
    ):
        page.set_viewport_size({"width": width, "height": 800})
        for group in groups:
            middles = {
                round(box["y"] + box["height"] / 2)
                for link in page.locator(group).filter(visible=True).all()
                if (box := link.bounding_box()) is not None
            }
            assert max(middles) - min(middles) < 10, (width, group, middles)
    expect(page.locator("header .whoami")).to_have_attribute("title", long_name)
    page.screenshot(path=ARTIFACTS / "header-long-name.png")


def test_a_guests_header_keeps_to_one_line_with_a_move_waiting(new_page, make_cornmaze):
    """A guest's account link said "Guest account: claim it", twice as long as "Your account":
    with "Your move" beside it the header took two lines at 1280 px. Beside the guest's name
    ("Guest 39472") it says "Claim account"."""
    from django.urls import reverse

    from games.accounts.guests import guest_create
    from games.models import Seat
    from tests.browser.test_failed_requests_browser import ARTIFACTS
    from tests.conftest import to_move

    game = make_cornmaze()
    guest = guest_create()
    Seat.objects.filter(game=game, index=to_move(game)).update(user=guest)
    page = new_page()
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(reverse("guest_return", args=[guest.profile.guest_key]))  # type: ignore[attr-defined]
    page.get_by_role("button", name=f"Continue as {guest.get_username()}").click()
    page.goto("/")
    expect(page.locator("#your-move")).to_have_text("Your move: 1")
    expect(page.locator("header .account-link")).to_have_text("Claim account")
    whole = "header .brand, header #your-move, header nav.site > *, header nav.account > *"
    middles = {
        round(box["y"] + box["height"] / 2)
        for link in page.locator(whole).filter(visible=True).all()
        if (box := link.bounding_box()) is not None
    }
    page.screenshot(path=ARTIFACTS / "header-guest.png")
    assert max(middles) - min(middles) < 10, middles
