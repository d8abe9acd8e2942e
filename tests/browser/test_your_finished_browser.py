"""The lobby's "Your games" in a real browser: your finished games below the running ones,
newest first and paged, each player's name a link to their page."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from games.pages.views import YOUR_FINISHED_PAGE
from tests.browser.tour import client_for, signed_in
from tests.test_archive import bulk_finished

pytestmark = pytest.mark.browser


def test_your_finished_games_are_paged_below_the_running_ones(browser, live_server) -> None:
    ann = User.objects.create_user("ann", password="a-long-passphrase")
    bob = User.objects.create_user("bob", password="a-long-passphrase")
    games = bulk_finished(YOUR_FINISHED_PAGE + 2, [ann, bob], winner=0)
    context = signed_in(browser, live_server.url, client_for(ann))
    try:
        page = context.new_page()
        page.goto("/")
        section = page.locator("#your-games")
        expect(section.get_by_role("heading", name="Your finished games")).to_be_visible()
        rows = section.locator("li.game-row.finished")
        expect(rows).to_have_count(YOUR_FINISHED_PAGE)
        expect(rows.first).to_contain_text(f"Corn maze #{games[0].pk}")
        expect(rows.first).to_contain_text("you came 1st")

        section.get_by_role("link", name="Older →").click()
        expect(rows).to_have_count(2)
        expect(rows.last).to_contain_text(f"Corn maze #{games[-1].pk}")
        section.get_by_role("link", name="← Newer").click()
        expect(rows.first).to_contain_text(f"Corn maze #{games[0].pk}")

        rows.first.get_by_role("link", name="bob").click()
        expect(page).to_have_url(f"{live_server.url}/players/bob/")
        expect(page.get_by_role("heading", level=1)).to_have_text("bob")
    finally:
        context.close()
