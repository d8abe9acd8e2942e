"""Vacation in the browser (issue 14): two new players sign up and start a Corn maze; one takes
a vacation from the account page, and the other sees "on vacation until ..." beside the name
on the game page and in the lobby; back early, the note is gone and the days not begun are
given back."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from games.models import Profile, Vacation
from tests.browser.conftest import corn_maze_of_two

pytestmark = pytest.mark.browser
PASSWORD = "correct horse battery"


def sign_up(page: Page, name: str) -> None:
    page.goto("/accounts/signup/")
    page.locator("#id_username").fill(name)
    page.locator("#id_password1").fill(PASSWORD)
    page.locator("#id_password2").fill(PASSWORD)
    page.get_by_role("button", name="Sign up").click()
    expect(page.locator("header .whoami")).to_have_text(name)


def test_a_player_takes_a_vacation_returns_and_the_opponent_sees_it(new_page) -> None:
    ann, bob = new_page(), new_page()
    sign_up(ann, "ann")
    sign_up(bob, "bob")
    game, _, _ = corn_maze_of_two(ann, bob)
    url = f"/games/{game.pk}/"
    expect(bob.locator("#clocks .vacation")).to_have_count(0)

    # Ann goes away for three days, from her account page. Her profile's zone is not her
    # browser's: the dates she picks are days in her zone, and every time she reads is in the
    # browser's, the message's as the page's.
    Profile.objects.filter(user__username="ann").update(time_zone="America/Los_Angeles")
    ann.goto("/accounts/")
    expect(ann.locator("#vacation-days")).to_contain_text("You have 14 vacation days")
    back_on = (timezone.localdate() + timedelta(days=3)).isoformat()
    ann.locator("#id_vacation_return_on").fill(back_on)
    ann.get_by_role("button", name="Start my vacation").click()
    expect(ann.locator(".messages")).to_contain_text("Enjoy your vacation")
    expect(ann.locator("#vacation-state")).to_contain_text("You are on vacation until")
    until = ann.locator("#vacation-state time").first.inner_text()
    assert ann.locator(".messages time").inner_text() == until

    bob.goto(url)
    seat = bob.locator("#clocks li", has_text="ann")
    expect(seat.locator(".vacation")).to_contain_text("on vacation until")
    bob.goto("/")
    expect(bob.locator(".game-row", has_text="ann").locator(".vacation").first).to_contain_text(
        "on vacation until"
    )

    # Back early: the note goes, and the days not begun come back.
    ann.goto("/accounts/")
    ann.get_by_role("button", name="I am back").click()
    expect(ann.locator(".messages")).to_contain_text("Welcome back")
    welcome = ann.locator(".messages li").evaluate("e => getComputedStyle(e).backgroundColor")
    expect(ann.locator("#vacation-days")).to_contain_text(re.compile(r"You have 13 vacation days"))
    assert Vacation.objects.get(user__username="ann").days_left == 13
    bob.goto(url)
    expect(bob.locator("#clocks li", has_text="ann")).to_be_visible()
    expect(bob.locator("#clocks .vacation")).to_have_count(0)

    # Her days gone meanwhile (another tab's vacation), the form she had open is refused, in
    # a banner that looks like a refusal.
    ann.goto("/accounts/")
    ann.locator("#id_vacation_return_on").fill(back_on)
    Vacation.objects.filter(user__username="ann").update(
        days_left=0, weeks_counted_to=timezone.now() + timedelta(days=7)
    )
    ann.get_by_role("button", name="Start my vacation").click()
    refusal = ann.locator(".messages li.error")
    expect(refusal).to_have_text("You have no vacation days left.")
    expect(refusal).to_have_attribute("role", "alert")
    assert refusal.evaluate("e => getComputedStyle(e).backgroundColor") != welcome
    assert not Vacation.objects.get(user__username="ann").on_vacation(timezone.now())
