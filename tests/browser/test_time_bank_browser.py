"""Issue 14, parts 3-5 in the browser: a player signs up (the browser's time zone is kept),
creates a Corn maze with a time bank and weekends off, a guest joins, they move, and the one
not to move gives the other a day, which the other sees by polling."""

from __future__ import annotations

import re
from datetime import UTC, datetime, time, timedelta

from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from games import clock
from games.engines import cornmaze
from games.models import Game, Profile, Seat
from games.play import core
from tests.browser.conftest import TIMEOUT_MS

PASSWORD = "correct horse battery"
# A long name with no space: the seat's row must not squeeze it onto two lines.
ALICE = "Alexandrina_Wanderer_80873"


def letter(col: int) -> str:
    return chr(ord("a") + col)


def name_whole(pages: dict[int, Page]) -> None:
    """At 1280 px a seat's row wraps its clock and bank whole rather than break the name."""
    for page in pages.values():
        name = page.locator("#clocks .seat-name a").filter(has_text=ALICE)
        assert name.evaluate("el => el.getClientRects().length") == 1  # one line box


def log_lines_apart(page: Page) -> None:
    """Each line of the log in one box of its own, none over another: a gift of time (a
    sentence, not a move) spans the log's columns rather than run into a move's line."""
    boxes = page.locator("#log li").evaluate_all(
        """els => els.map(e => {
            const r = e.getBoundingClientRect();
            return [e.getClientRects().length, r.left, r.top, r.right, r.bottom];
        })"""
    )
    assert len(boxes) >= 2
    for i, (count, left, top, right, bottom) in enumerate(boxes):
        assert count == 1, boxes  # not broken across two columns
        for _, left2, top2, right2, bottom2 in boxes[i + 1 :]:
            assert right <= left2 or right2 <= left or bottom <= top2 or bottom2 <= top, boxes


def test_a_game_with_a_bank_and_weekends_off_and_a_day_given(browser, live_server, new_page):
    # Alice's browser is in Tokyo: sign-up keeps its zone (static/js/timezone.js).
    context = browser.new_context(base_url=live_server.url, timezone_id="Asia/Tokyo")
    context.set_default_timeout(TIMEOUT_MS)
    try:
        alice = context.new_page()
        alice.goto("/accounts/signup/")
        alice.locator("#id_username").fill(ALICE)
        alice.locator("#id_password1").fill(PASSWORD)
        alice.locator("#id_password2").fill(PASSWORD)
        alice.get_by_role("button", name="Sign up").click()
        expect(alice.locator("header .whoami")).to_have_text(ALICE)
        assert Profile.objects.get(user__username=ALICE).time_zone == "Asia/Tokyo"
        alice.goto("/accounts/")
        expect(alice.locator("#account-time-zone")).to_have_text("Asia/Tokyo")

        alice.goto("/new/cornmaze/")
        alice.get_by_label("Time bank").select_option("7")
        alice.get_by_label("Weekends off").check()
        alice.click("text=Create the game")
        alice.wait_for_url("**/games/*/")
        game = Game.objects.get()
        assert game.clock_options == {"bank_days": 7, "weekends_off": True}
        expect(alice.locator("#clock-rule")).to_contain_text("time bank of 7 days")
        expect(alice.locator("#clock-rule")).to_contain_text("Weekends off")

        bob = new_page()  # a guest, in UTC
        bob.goto("/")
        bob.locator("#open-games").get_by_role("button", name="Join").click()
        bob.wait_for_url(f"**/games/{game.pk}/")
        alice.locator("#board").wait_for()
        game.refresh_from_db()
        pages = {0: alice, 1: bob}
        (mover,) = [s.index for s in Seat.objects.filter(game=game, deadline__isnull=False)]
        # The mover sees the move's time and the bank; the other player may give a day.
        mover_row = pages[mover].locator("#clocks li.to-move")
        expect(mover_row.locator(".bank")).to_contain_text(
            re.compile(r"This move: (3 days, 0:00:00|2 days, 23:59)")
        )
        expect(mover_row.locator(".bank-left")).to_have_text("7 days, 0:00:00")
        name_whole(pages)

        # The mover plays; then the other is to move, and the mover gives them a day.
        page = pages[mover]
        form = page.locator("#move-form")
        first, second = cornmaze.legal_moves(game.state)[0]
        form.locator(f"input[name=first][value={letter(first)}]").check()
        form.locator(f"input[name=second][value={letter(second)}]").check()
        form.get_by_role("button", name="Play").click()
        page.locator("#log li[value='1']").wait_for()
        other = 1 - mover
        other_name = Seat.objects.select_related("user").get(game=game, index=other).name
        before = Seat.objects.get(game=game, index=other).deadline
        assert before is not None
        page.get_by_role("button", name=f"Give {other_name} one more day").click()
        expect(page.locator("#log")).to_contain_text(f"gave {other_name} one more day.")
        expect(page.get_by_role("button", name=re.compile("one more day"))).to_have_count(0)
        log_lines_apart(page)
        after = Seat.objects.get(game=game, index=other).deadline
        assert after is not None and after > before
        # The opponent's page picks it up by polling: the gift in the log, a later deadline.
        expect(pages[other].locator("#log")).to_contain_text(f"gave {other_name} one more day.")
        expect(pages[other].locator("#clocks li.to-move .bank-left")).to_have_text(
            "7 days, 0:00:00"
        )
        name_whole(pages)  # Alice was to move on one of the two checks
    finally:
        context.close()


def test_a_clock_with_weekends_off_stands_still_in_the_weekend_as_the_page_counts(
    new_page,
) -> None:
    players = [User.objects.create_user(name) for name in ("ariadne", "theseus")]
    game = core.game_create(
        kind="cornmaze",
        creator=players[0],
        options={"size": 8},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
        clock_options={"weekends_off": True},
    )
    core.game_join(game_id=game.pk, user=players[1])
    now = clock.now()
    # The weekend after this one's Saturday 00:00 UTC (the players' zone), and a deadline past it.
    saturday = datetime.combine(now.date(), time(), tzinfo=UTC) + timedelta(
        days=(5 - now.weekday()) % 7 or 7
    )
    deadline = now + timedelta(days=12)
    Seat.objects.filter(game=game, deadline__isnull=False).update(deadline=deadline)

    page = new_page()
    in_weekend = saturday + timedelta(hours=12)
    page.clock.set_fixed_time(in_weekend)
    page.goto(f"/games/{game.pk}/")
    seat_clock = page.locator(f'#clocks .clock[data-deadline="{deadline.isoformat()}"]')
    left = clock.clock_between(in_weekend, deadline, UTC)
    assert left < deadline - in_weekend - timedelta(days=1)  # the weekend's rest is not counted
    expect(seat_clock.locator(".left")).to_have_text(clock.format_left(left))
    expect(seat_clock.locator(".stopped")).to_be_visible()

    monday_noon = saturday + timedelta(days=2, hours=12)
    page.clock.set_fixed_time(monday_noon)
    left = clock.clock_between(monday_noon, deadline, UTC)
    expect(seat_clock.locator(".left")).to_have_text(clock.format_left(left))
    expect(seat_clock.locator(".stopped")).to_be_hidden()
