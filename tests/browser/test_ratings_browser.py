"""Ratings in the browser: two registered players, each in a browser of their own, play a rated
Corn maze (the "Rated game" box is on by default); when it ends, both game pages show each
player's change, the winner's page shows the rating and its chart, and the leaderboard lists
both (they had four rated games before this one)."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from games.archive.ratings import ratings_recompute
from games.models import Game, Rating
from tests.test_archive import bulk_finished
from tests.worker_fixtures import make_player

PASSWORD = "a-long-passphrase"


def sign_in(page: Page, name: str) -> None:
    page.goto("/accounts/login/")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/$"))


def test_two_players_play_a_rated_game_and_see_their_ratings(new_page):
    ann, bob = make_player("ann"), make_player("bob")
    bulk_finished(4, [ann, bob], winner=1)  # bob won the four before
    ratings_recompute()
    alice_page, bob_page = new_page(), new_page()
    sign_in(alice_page, "ann")
    sign_in(bob_page, "bob")

    alice_page.goto("/new/cornmaze/")
    expect(alice_page.get_by_label("Rated game")).to_be_checked()
    alice_page.fill("input[name=size]", "6")
    alice_page.click("text=Create the game")
    alice_page.wait_for_url("**/games/*/")
    game = Game.objects.get(status=Game.Status.OPEN)
    assert game.rated
    url = f"/games/{game.pk}/"
    bob_page.goto("/")
    bob_page.locator("#open-games").get_by_role("button", name="Join").click()
    bob_page.wait_for_url(f"**{url}")
    expect(bob_page.locator("#rated")).to_have_text("Rated game.")

    # Ann resigns (the page asks first): Bob wins.
    alice_page.goto(url)
    alice_page.on("dialog", lambda dialog: dialog.accept())
    alice_page.get_by_role("button", name="Resign").click()
    expect(alice_page.locator("#status")).to_contain_text("bob wins")
    game.refresh_from_db()
    assert game.status == Game.Status.FINISHED and game.rating_seq is not None

    # Both pages show each player's change: up for the winner, down for the other.
    for page in (alice_page, bob_page):
        page.goto(url)
        changes = page.locator("#clocks .rating-change")
        expect(changes).to_have_count(2)
        expect(changes.nth(0)).to_contain_text(re.compile(r"rating \d+ \(\u2212\d+\)"))
        expect(changes.nth(1)).to_contain_text(re.compile(r"rating \d+ \(\+\d+\)"))
    bobs = Rating.objects.get(user=bob, kind="cornmaze")
    assert bobs.games == 5

    # Bob's page: the rating with its uncertainty, and the chart of its history.
    bob_page.get_by_role("link", name="bob").first.click()
    bob_page.wait_for_url("**/players/bob/")
    ratings = bob_page.locator("#ratings li[data-kind=cornmaze]")
    expect(ratings.locator(".rating-value")).to_have_text(re.compile(r"^\d+$"))
    expect(ratings).to_contain_text("5 rated games")
    chart = ratings.locator("svg.rating-chart")
    expect(chart).to_have_attribute("aria-label", re.compile(r"Corn maze rating over 5 games"))
    expect(chart.locator("polyline")).to_have_count(1)

    # The leaderboard lists both, bob first.
    ratings.get_by_role("link", name="Leaderboard").click()
    bob_page.wait_for_url("**/leaderboard/cornmaze/")
    rows = bob_page.locator("#leaderboard tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("bob")
    expect(rows.nth(1)).to_contain_text("ann")


def test_the_leaderboards_headers_break_between_words_on_a_phone(new_page):
    """At 375 px the leaderboard's column headers keep each word whole ("Ran" over "k" was
    drawn): a header may wrap, but only where there is a space."""
    ann, bob = make_player("ann"), make_player("bob")
    bulk_finished(5, [ann, bob, "strong"], winner=1)
    ratings_recompute()
    page = new_page()
    page.set_viewport_size({"width": 375, "height": 800})
    page.goto("/leaderboard/cornmaze/")
    headers = page.locator("#leaderboard thead th")
    expect(headers).to_have_text(["Rank", "Player", "Rating", "Rated games"])
    # Each word of a header in one piece: a word broken across lines has a box on each.
    pieces = headers.evaluate_all(
        """ths => ths.map(th => {
            const text = th.firstChild, words = [], range = document.createRange();
            for (const m of text.data.matchAll(/\\S+/g)) {
                range.setStart(text, m.index);
                range.setEnd(text, m.index + m[0].length);
                words.push([m[0], range.getClientRects().length]);
            }
            return words;
        })"""
    )
    assert pieces == [[["Rank", 1]], [["Player", 1]], [["Rating", 1]], [["Rated", 1], ["games", 1]]]
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
