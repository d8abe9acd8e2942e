"""The Content-Security-Policy in Chromium: the main pages of the site, a move played through
htmx included, report no violation and log no error; a script or an hx-on handler injected into
the page does not run."""

from __future__ import annotations

from collections.abc import Callable

from django.urls import reverse
from playwright.sync_api import Page, Route, expect

from games.ui.cornmaze import column_letter as letter
from tests.browser.tour import client_for, signed_in
from tests.conftest import FIXED_SEED, a_legal_move, play_to_the_end, seat_user, to_move

# Kept by the page from its first script on (an init script runs outside the page's policy).
LISTEN = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__violations.push(
    e.violatedDirective + " " + (e.blockedURI || "inline") + " " + e.sourceFile
  );
});
"""


def watched(page: Page) -> list[str]:
    """Console errors of this page, as they come."""
    errors: list[str] = []
    page.add_init_script(LISTEN)
    page.on(
        "console",
        lambda msg: errors.append(f"{msg.text} {msg.location}") if msg.type == "error" else None,
    )
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return errors


def violations(page: Page) -> list[str]:
    return page.evaluate("() => window.__violations")


def test_main_pages_keep_to_the_policy(new_page: Callable[[], Page], make_cornmaze) -> None:
    finished = play_to_the_end(make_cornmaze(size=6, seed=FIXED_SEED))
    page = new_page()
    errors = watched(page)

    # A player signs in and moves by htmx (the board and log swap in place).
    game = make_cornmaze()
    user = seat_user(game, to_move(game))
    page.goto(reverse("login"))
    page.locator("#id_username").fill(user.get_username())
    page.locator("#id_password").fill("a-long-passphrase")  # make_user's
    page.get_by_role("button", name="Sign in").click()
    page.goto(reverse("game", args=[game.pk]))
    first, second = a_legal_move(game)
    page.check(f"#move-form input[name=first][value={letter(first)}]")
    page.check(f"#move-form input[name=second][value={letter(second)}]")
    page.locator("#play").click()
    page.locator("#log li[value='1']").wait_for()
    assert violations(page) == [], page.url

    player = finished.seats.get(index=0).user
    assert player is not None
    for path in [
        "/",
        reverse("game", args=[game.pk]),
        reverse("game", args=[finished.pk]),
        reverse("game_replay", args=[finished.pk]) + "?ply=2",
        reverse("archive"),
        reverse("player", args=[player.get_username()]),
        reverse("rules", args=["cornmaze"]),
        reverse("rules", args=["robotmaze"]),
        reverse("rules", args=["mazerace"]),
        reverse("game_new", args=["robotmaze"]),
        reverse("game_new", args=["mazerace"]),
        reverse("account"),
        reverse("email_settings"),
        reverse("logout"),
        reverse("login"),
        reverse("signup"),
        reverse("password_reset"),
    ]:
        page.goto(path)
        page.wait_for_load_state("load")
        assert violations(page) == [], path
    # Step through the replay by htmx, as a visitor would.
    page.goto(reverse("game_replay", args=[finished.pk]))
    page.keyboard.press("ArrowRight")
    expect(page.locator("#step")).to_have_attribute("data-ply", "1")
    assert violations(page) == []
    assert errors == []

    # What an attacker's injection would try: none of it runs, and each try is reported.
    page.evaluate(
        """() => {
          const script = document.createElement("script");
          script.textContent = "window.__ran = 'script ran'";
          document.body.append(script);
          const button = document.createElement("button");
          button.id = "injected";
          button.setAttribute("hx-on:click", "window.__ran = 'hx-on ran'");
          button.setAttribute("onclick", "window.__ran = 'onclick ran'");
          document.body.append(button);
          htmx.process(button);
        }"""
    )
    page.click("#injected")
    assert page.evaluate("() => window.__ran") is None
    assert any(v.startswith("script-src-elem inline") for v in violations(page)), violations(page)
    assert any(v.startswith("script-src-attr inline") for v in violations(page)), violations(page)


def test_a_corn_maze_games_swaps_keep_to_the_policy(browser, live_server, make_cornmaze) -> None:
    """Every swap of a Corn maze game's page, as its two players and a spectator see them, and
    of its replay, reports no violation of the policy (style-src included)."""
    game = make_cornmaze(size=12)
    pages: dict[int | None, Page] = {}
    errors: list[str] = []
    for seat in (0, 1, None):
        client = client_for(seat_user(game, seat)) if seat is not None else None
        page = signed_in(browser, live_server.url, client).new_page()
        errors += watched(page)  # the same list, filled as the page goes
        page.on("dialog", lambda dialog: dialog.accept())  # Resign's hx-confirm
        page.goto(reverse("game", args=[game.pk]))
        pages[seat] = page
    mover = to_move(game)
    page, other = pages[mover], pages[1 - mover]
    first, second = a_legal_move(game)
    # A gift of time, a refusal (Play with one shift), the draft's preview and the move.
    other.locator("form.give-time button").click()
    expect(page.locator("#log .clock-event")).to_have_count(1)
    page.check(f"#move-form input[name=first][value={letter(first)}]")
    page.click("#play")
    expect(page.locator("#error")).to_be_visible()
    page.check(f"#move-form input[name=second][value={letter(second)}]")
    expect(page.locator("#preview-path")).to_be_attached()
    page.click("#play")
    # The others' pages pick the move up by polling; the other player resigns.
    for seen in pages.values():
        expect(seen.locator("#log li[value='1']:not(.clock-event)")).to_be_attached()
    other.locator("form.resign button").click()
    for seen in pages.values():
        seen.locator("#seed").wait_for()
        assert violations(seen) == [], seen.url
    # Its replay, played through and verified.
    page.goto(reverse("game_replay", args=[game.pk]))
    page.click("#play")
    expect(page.locator("#step")).to_have_attribute("data-ply", "1")
    page.click("#verify-button")
    expect(page.locator("#verify")).to_contain_text("Checks out")
    assert violations(page) == []
    assert [e for e in errors if "Content Security Policy" in e] == []


def held_until(page: Page, held: list[Route], count: int) -> None:
    """Wait (in the page's own time: its events are handled meanwhile) until `count` requests
    have been held."""
    for _ in range(200):
        if len(held) >= count:
            return
        page.wait_for_timeout(50)
    raise AssertionError(f"{len(held)} requests held, not {count}")


def test_choices_made_faster_than_the_server_answers_log_no_error(
    new_page: Callable[[], Page], make_cornmaze
) -> None:
    """Each choice asks for a preview; a choice made while the last one's is on its way, and
    the move played then, wait in line for it (hx-sync queue all) rather than abort it, which
    htmx logs as an error."""
    game = make_cornmaze(size=6)
    user = seat_user(game, to_move(game))
    page = new_page()
    errors = watched(page)
    page.goto(reverse("login"))
    page.locator("#id_username").fill(user.get_username())
    page.locator("#id_password").fill("a-long-passphrase")  # make_user's
    page.get_by_role("button", name="Sign in").click()
    page.goto(reverse("game", args=[game.pk]))
    held: list[Route] = []
    page.route(f"**{reverse('game_draft', args=[game.pk])}", lambda route: held.append(route))
    first, second = a_legal_move(game)
    # The first shift alone is kept as a draft too; the second waits in line behind it.
    page.check(f"#move-form input[name=first][value={letter(first)}]")
    page.check(f"#move-form input[name=second][value={letter(second)}]")
    held_until(page, held, 1)
    held[0].continue_()
    held_until(page, held, 2)
    # Another second shift while the first preview is held on its way.
    other = page.locator("#move-form input[name=second]:not([disabled]):not(:checked)").first
    other_letter = other.get_attribute("value")
    other.check()  # an abort would be logged at once, before the answers below
    held[1].continue_()
    held_until(page, held, 3)
    held[2].continue_()
    expect(page.locator("#board-caption")).to_contain_text(
        f"Preview of {letter(first)} then {other_letter}"
    )
    # Play while a preview is on its way: the move waits in line behind it, not aborting it.
    page.check(f"#move-form input[name=second][value={letter(second)}]")
    held_until(page, held, 4)
    page.locator("#play").click()
    held[3].continue_()
    page.locator("#log li[value='1']").wait_for()
    assert errors == []
