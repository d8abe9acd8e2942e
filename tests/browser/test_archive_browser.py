"""A visitor filters the archive, opens a replay, steps through it with the keyboard, jumps from
the log, plays it, and verifies the game; and the same pages work with JavaScript off."""

from __future__ import annotations

import hashlib
import re

from games.models import Game
from tests.test_archive import bulk_finished, play_out

# A 6x6 Corn maze of two that play_out plays in 8 moves, every time (its draws come from the
# seed): the tests below step to moves 1 to 4 and play on from 3.
EIGHT_MOVES = hashlib.sha256(b"archive 7").digest()


def eight_moves(make_cornmaze) -> Game:
    game = play_out(make_cornmaze(seats=2, size=6, seed=EIGHT_MOVES))
    assert game.ply == 8
    return game


def test_filter_the_archive_open_a_replay_step_with_the_keyboard_and_verify(
    new_page, make_cornmaze, make_user
):
    game = eight_moves(make_cornmaze)
    winner = game.seats.get(place=1).user
    others = bulk_finished(30, [make_user(), make_user()])
    page = new_page()

    page.goto("/archive/")
    assert page.locator("tr.archive-row").count() == 25
    # The finish time is shown in the reader's time zone; the UTC one stays in the title.
    page.locator("tr.archive-row time[data-local]").first.wait_for()
    assert "UTC" in page.locator("tr.archive-row time").first.get_attribute("title")

    page.fill("input[name=player]", winner.username)
    page.select_option("select[name=result]", "won")
    page.wait_for_url(re.compile(r"/archive/\?.*player=.*result=won"))
    page.locator(f"#game-{game.pk}").wait_for()
    page.wait_for_function("() => document.querySelectorAll('tr.archive-row').length === 1")
    assert page.locator(f"#game-{others[0].pk}").count() == 0
    # Back: the unfiltered list again; forward: the filtered one.
    page.go_back()
    page.wait_for_function("() => document.querySelectorAll('tr.archive-row').length === 25")
    page.go_forward()
    page.locator(f"#game-{game.pk}").wait_for()

    page.locator(f"#game-{game.pk}").get_by_role("link", name="Replay").click()
    page.wait_for_url(f"**/games/{game.pk}/replay/")
    step = page.locator("#step")
    assert step.get_attribute("data-ply") == "0"
    page.locator("#play").wait_for()  # the script is running

    page.keyboard.press("ArrowRight")
    page.locator('#step[data-ply="1"]').wait_for()
    assert "Move 1 of" in page.locator("#caption").inner_text()
    page.keyboard.press("ArrowRight")
    page.locator('#step[data-ply="2"]').wait_for()
    page.keyboard.press("ArrowLeft")
    page.locator('#step[data-ply="1"]').wait_for()
    # The log marks the move shown; it is updated just after the step swaps in.
    page.locator('#log a[aria-current="step"][data-ply="1"]').wait_for()
    assert page.locator('#log a[aria-current="step"]').count() == 1
    assert page.url.endswith("?ply=1")
    page.keyboard.press("End")
    page.locator(f'#step[data-ply="{game.ply}"]').wait_for()
    assert "wins" in page.locator("#caption").inner_text()
    page.keyboard.press("Home")
    page.locator('#step[data-ply="0"]').wait_for()

    # Jump from the log, then play to the end by itself, four times as fast as at first.
    page.locator('#log a[data-ply="3"]').click()
    page.locator('#step[data-ply="3"]').wait_for()
    page.locator("#speed").select_option("4")
    page.locator("#play").click()
    assert page.locator("#play").inner_text() == "Pause"
    page.locator(f'#step[data-ply="{game.ply}"]').wait_for(timeout=game.ply * 1500)
    page.wait_for_function("() => document.getElementById('play').textContent === 'Play'")
    assert page.locator("#speed").input_value() == "4"  # kept across the steps' swaps

    page.get_by_role("link", name="Verify").click()
    page.locator("#verify .verified.ok").wait_for()
    assert "Checks out" in page.locator("#verify").inner_text()


def test_the_archive_and_a_replay_work_without_javascript(
    browser, live_server, transactional_db, make_cornmaze
):
    game = eight_moves(make_cornmaze)
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto("/archive/")
        page.select_option("select[name=game]", "robotmaze")
        page.get_by_role("button", name="Filter").click()
        page.wait_for_url("**/archive/?*game=robotmaze*")
        assert "No finished game matches these filters" in page.locator("#no-games").inner_text()
        page.select_option("select[name=game]", "cornmaze")
        page.get_by_role("button", name="Filter").click()
        page.locator(f"#game-{game.pk}").get_by_role("link", name="Replay").click()
        assert not page.locator("#speed-control").is_visible()  # Play needs JavaScript
        page.get_by_role("link", name="Next ▶").click()
        page.wait_for_url("**?ply=1")
        assert page.locator("#step").get_attribute("data-ply") == "1"
        page.locator('#log a[data-ply="4"]').click()
        assert page.locator("#step").get_attribute("data-ply") == "4"
        page.get_by_role("link", name="Verify").click()
        assert "Checks out" in page.locator("#verify").inner_text()
        assert Game.objects.get(pk=game.pk).is_over
    finally:
        context.close()


def test_a_bot_typed_in_the_player_filter_lists_its_games(new_page, make_user):
    ann, bob = make_user(), make_user()
    (against_bot,) = bulk_finished(1, [ann, "strong"], winner=1)
    others = bulk_finished(3, [ann, bob])
    page = new_page()

    page.goto("/archive/")
    page.locator(f"#game-{others[0].pk}").wait_for()
    page.fill("input[name=player]", "bot (strong)")
    page.press("input[name=player]", "Enter")
    page.wait_for_url(re.compile(r"/archive/\?.*player=bot"))
    page.wait_for_function("() => document.querySelectorAll('tr.archive-row').length === 1")
    row = page.locator(f"#game-{against_bot.pk}")
    assert row.locator(".bot-name").inner_text() == "Bot (strong)"
    assert row.locator(".bot-name a").count() == 0  # a bot has no player page


def test_a_field_left_then_filter_asks_once_and_back_goes_to_the_last_filter(new_page, make_user):
    ann, bob = make_user(), make_user()
    (anns,) = bulk_finished(1, [ann, bob], winner=0)
    bulk_finished(2, [bob, make_user()])
    page = new_page()
    page.goto("/archive/")
    page.locator(f"#game-{anns.pk}").wait_for()
    listed: list[str] = []
    page.on("request", lambda r: listed.append(r.url) if "/archive/?" in r.url else None)
    start = page.evaluate("history.length")

    # Leaving the field asks for its list; Filter then asks for nothing more.
    page.fill("input[name=player]", ann.username)
    page.press("input[name=player]", "Tab")
    page.wait_for_url(re.compile(r"/archive/\?.*player="))
    page.wait_for_function("() => document.querySelectorAll('tr.archive-row').length === 1")
    page.get_by_role("button", name="Filter").click()
    page.select_option("select[name=result]", "won")
    page.wait_for_url(re.compile(r"/archive/\?.*result=won"))
    assert len(listed) == 2, listed
    assert page.evaluate("history.length") == start + 2

    page.go_back()
    page.wait_for_url(re.compile(r"/archive/\?.*player=.*result=&"))
    page.go_back()
    page.wait_for_url(re.compile(r"/archive/$"))
    page.wait_for_function("() => document.querySelectorAll('tr.archive-row').length === 3")
