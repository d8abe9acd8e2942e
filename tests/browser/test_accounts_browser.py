"""Accounts in a real browser: sign up, out and in; a guest comes back through its private link
in another browser and claims the account."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.urls import reverse
from playwright.sync_api import Page, expect

from games.accounts.guests import guest_create
from games.models import Profile

pytestmark = pytest.mark.browser

PASSWORD = "correct horse battery"
ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"


def test_sign_up_sign_out_and_sign_in_again(new_page: Callable[[], Page]) -> None:
    page = new_page()
    page.goto("/")
    page.get_by_role("link", name="Sign up").click()

    page.locator("#id_username").fill("ariadne")
    page.locator("#id_password1").fill(PASSWORD)
    page.locator("#id_password2").fill(PASSWORD)
    page.get_by_role("button", name="Sign up").click()

    expect(page).to_have_url(re.compile(r"^http://[^/]+/$"))  # the lobby
    expect(page.locator("header .whoami")).to_have_text("ariadne")
    expect(page.locator("header").get_by_role("link", name="Your account")).to_be_visible()

    page.get_by_role("button", name="Sign out").click()
    expect(page.locator("header .whoami")).to_have_count(0)

    page.locator("header").get_by_role("link", name="Sign in").click()
    page.locator("#id_username").fill("ariadne")
    page.locator("#id_password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator(".error").first).to_be_visible()
    page.locator("#id_password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()

    expect(page.locator("header .whoami")).to_have_text("ariadne")


def test_guest_comes_back_by_private_link_and_claims(new_page: Callable[[], Page]) -> None:
    guest = guest_create()
    name = guest.get_username()
    link = reverse("guest_return", args=[guest.profile.guest_key])  # type: ignore[attr-defined]

    # Another browser: opening the link only asks.
    page = new_page()
    page.goto(link)
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Continue as {name}")
    expect(page.locator("header .whoami")).to_have_count(0)
    page.get_by_role("button", name=f"Continue as {name}").click()
    expect(page.locator("header .whoami")).to_have_text(name)

    page.locator("header").get_by_role("link", name="Claim account").click()
    expect(page.locator("#guest-link")).to_have_value(page.url.split("/accounts")[0] + link)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "account-guest.png", full_page=True)

    claim = page.locator("#claim-form")
    claim.locator("#id_username").fill("Theseus")
    claim.locator("#id_email").fill("theseus@example.com")
    claim.locator("#id_password1").fill(PASSWORD)
    claim.locator("#id_password2").fill(PASSWORD + " typo")
    claim.get_by_role("button", name="Claim the account").click()
    expect(page.locator("#claim-form .error")).to_contain_text("The two passwords differ")
    expect(page.locator("header .whoami")).to_have_text(name)

    claim.locator("#id_password1").fill(PASSWORD)
    claim.locator("#id_password2").fill(PASSWORD)
    claim.get_by_role("button", name="Claim the account").click()

    expect(page.locator("header .whoami")).to_have_text("Theseus")
    expect(page.locator("#account-email")).to_contain_text("theseus@example.com")
    expect(page.locator("#account-email")).to_contain_text("not verified yet")
    page.screenshot(path=ARTIFACTS / "account-registered.png", full_page=True)

    # The private link is dead now, for anyone.
    other = new_page()
    response = other.goto(link)
    assert response is not None and response.status == 404
    expect(other.get_by_role("heading", level=1)).to_have_text("This link does not work")


def test_a_guest_signing_out_is_shown_its_private_link_first(new_page: Callable[[], Page]) -> None:
    page = new_page()
    page.goto("/new/cornmaze/")
    page.click("text=Create the game")
    page.wait_for_url("**/games/*/")
    name = page.locator("header .whoami").inner_text()
    assert name.startswith("Guest ")

    page.locator("header").get_by_role("link", name="Sign out").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign out")
    expect(page.locator("main")).to_contain_text("only its private link brings you back")
    expect(page.locator("main")).to_contain_text("its 1 unfinished game")
    link = page.locator("#guest-link").input_value()
    assert "/accounts/guest/" in link
    # Still signed in: the page only asked.
    expect(page.locator("header .whoami")).to_have_text(name)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "guest-sign-out.png", full_page=True)

    page.get_by_role("button", name="Sign out, I have kept the link").click()
    expect(page.locator("header .whoami")).to_have_count(0)

    # The kept link brings the guest back, with its game.
    page.goto(link)
    page.get_by_role("button", name=f"Continue as {name}").click()
    expect(page.locator("header .whoami")).to_have_text(name)
    expect(page.locator("#your-games")).to_contain_text("Corn maze")


def test_a_change_of_address_waits_for_its_link_and_can_be_called_off(
    new_page: Callable[[], Page],
) -> None:
    user = User.objects.create_user("ariadne", password=PASSWORD, email="ariadne@example.com")
    Profile.objects.create(user=user, email_verified=True)
    page = new_page()
    page.goto(reverse("login"))
    page.locator("#id_username").fill("ariadne")
    page.locator("#id_password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.goto(reverse("account"))

    page.locator("#email-form #id_address_email").fill("ariadne@exmaple.com")
    page.locator("#email-form").get_by_role("button", name="Save the address").click()

    state = page.locator("#account-email")
    expect(state).to_contain_text("ariadne@example.com (verified)")
    expect(page.locator("#email-pending")).to_contain_text(
        "Changing to ariadne@exmaple.com: open the link we sent it. "
        "Until then, mail goes to ariadne@example.com."
    )
    # The form holds the waiting address, for a typo to be mended there.
    expect(page.locator("#email-form #id_address_email")).to_have_value("ariadne@exmaple.com")
    page.locator("#email-pending").get_by_role("button", name="Keep ariadne@example.com").click()

    expect(page.locator("main")).to_contain_text("Mail keeps going to ariadne@example.com")
    expect(page.locator("#email-pending")).to_have_count(0)
    expect(state).to_contain_text("ariadne@example.com (verified)")
