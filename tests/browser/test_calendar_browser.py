"""Your deadlines in your calendar, in a real browser: a guest in a game where it is their move
makes a calendar link on the account page, the feed at that link holds the game, and "Make a
new link" turns the old one into a 404."""

from __future__ import annotations

import pytest
from icalendar import Calendar
from playwright.sync_api import Page, expect

from games.engines import cornmaze
from tests.browser.conftest import corn_maze_of_two

pytestmark = pytest.mark.browser


def feed_events(page: Page, link: str) -> list[str]:
    response = page.request.get(link)
    assert response.status == 200, response.status
    assert response.headers["content-type"] == "text/calendar; charset=utf-8"
    return [str(e["SUMMARY"]) for e in Calendar.from_ical(response.body()).walk("VEVENT")]


def test_the_account_page_makes_a_calendar_link_and_a_new_one(new_page) -> None:
    game, mover, other = corn_maze_of_two(new_page(), new_page())
    assert game.state is not None
    (seat,) = cornmaze.to_move(game.state)
    other_name = game.seats.get(index=1 - seat).name

    mover.goto("/")
    mover.locator("header .account-link").click()  # a guest: "Claim account"
    section = mover.locator("#calendar")
    expect(section.get_by_role("heading")).to_have_text("Your deadlines in your calendar")
    expect(mover.locator("#calendar-link")).to_have_count(0)
    section.get_by_role("button", name="Make a calendar link").click()

    link_box = mover.get_by_role("textbox", name="Your calendar link")
    expect(link_box).to_be_visible()
    first = link_box.input_value()
    assert first.endswith(".ics")
    expect(mover.locator("#calendar-subscribe")).to_have_attribute(
        "href", "webcal://" + first.split("://", 1)[1]
    )
    assert feed_events(mover, first) == [f"Your move: Corn maze #{game.pk} vs {other_name}"]

    section.get_by_role("button", name="Make a new link").click()
    expect(mover.locator(".messages")).to_contain_text(
        "Any link you made before has stopped working"
    )
    second = mover.get_by_role("textbox", name="Your calendar link").input_value()
    assert second != first
    assert mover.request.get(first).status == 404
    assert len(feed_events(mover, second)) == 1
    # The other player's calendar: not their move, no event.
    other.goto("/accounts/")
    other.locator("#calendar").get_by_role("button", name="Make a calendar link").click()
    assert feed_events(other, other.locator("#calendar-link").input_value()) == []

    mover.locator("#calendar").get_by_role("button", name="Stop the link").click()
    expect(mover.locator("#calendar-link")).to_have_count(0)
    assert mover.request.get(second).status == 404
