"""Two people set up their warehouses (one draws a random one, one clicks crates in), play a
Robot Maze Race to the end, and both warehouses are revealed."""

from __future__ import annotations

import contextlib

from playwright.sync_api import Error, Page, Route, expect

from games.engines import robotmaze
from games.models import Game
from tests.test_robotmaze_site import WAREHOUSES, robot_game, set_up

HAND_MADE = WAREHOUSES[0]  # a pattern nobody would draw by chance


def program(page, commands: str, runs: int) -> None:
    form = page.locator("#move-form")
    form.wait_for()
    for i, command in enumerate(commands, start=1):
        form.locator(f"select[name=command_{i}]").select_option(command)
    form.locator("select[name=runs]").select_option(str(runs))
    expect(page.locator("#program-preview")).to_contain_text(f": {len(commands) * runs} move")
    page.locator("#play").click()


def test_two_people_set_up_play_to_the_end_and_see_both_warehouses(new_page):
    alice, bob = new_page(), new_page()
    alice.goto("/new/robotmaze/")
    alice.click("text=Create the game")
    alice.wait_for_url("**/games/*/")
    game = Game.objects.get()
    bob.goto(f"/games/{game.pk}/")
    bob.locator("#join").click()

    # Alice draws a random warehouse and takes it.
    alice.locator("#move-form").wait_for()
    alice.get_by_role("button", name="Random warehouse").click()
    expect(alice.locator("#crate-count")).to_have_text("20 of 20 crates")
    alice.locator("#play").click()
    alice_name = game.seats.get(index=0).name
    expect(alice.locator("#board")).to_contain_text(f"{alice_name} is ready")

    # Bob's page learns that Alice is ready (polling); then he clicks his crates in one by one,
    # and sees the count and the problems as he goes.
    expect(bob.locator("#board")).to_contain_text(f"{alice_name} is ready", timeout=10_000)
    # Someone watching the set-up, with no grid to see yet, reads its sentence on the width the
    # page gives it (it wraps to the board's width once there is a board).
    watcher = new_page()
    watcher.goto(f"/games/{game.pk}/")
    expect(watcher.locator("#board")).to_contain_text(f"{alice_name} is ready")
    for page in (watcher, bob):
        box = page.locator("#board .phase").bounding_box()
        assert box is not None and box["width"] > 300, box
    # Bob clicks his crates in one by one, and sees the count and the problems as he goes.
    crates = [
        robotmaze.cell_name(r, c)
        for r, row in enumerate(HAND_MADE)
        for c, ch in enumerate(row)
        if ch == "X"
    ]
    # Until the warehouse is legal, its button is disabled, and looks it.
    looks = "b => [b.disabled, getComputedStyle(b).opacity, getComputedStyle(b).cursor]"
    assert bob.locator("#play").evaluate(looks) == [True, "0.45", "not-allowed"]
    for n, cell in enumerate(crates, start=1):
        bob.locator(f"#move-form td[data-cell={cell}] button").click()
        expect(bob.locator("#crate-count")).to_have_text(f"{n} of 20 crates")
    expect(bob.locator("#warehouse-problems")).to_contain_text("A legal warehouse")
    assert bob.locator("#play").evaluate(looks) == [False, "1", "pointer"]
    bob.locator("#play").click()
    expect(bob.locator(".warehouse-editor")).to_have_count(0)

    game.refresh_from_db()
    assert game.state["phase"] == "play"
    assert game.state["warehouses"][1] == HAND_MADE
    first = game.state["first_seat"]
    pages = [alice, bob]
    runner, other = pages[first], pages[1 - first]

    program(runner, "UUUU", 4)  # sixteen walls
    expect(runner.locator("#board")).to_contain_text("A1 to the north: wall (damage 16)")
    program(other, "R", 1)
    program(runner, "ULUL", 4)  # four more: broken down after the fourth command
    for page in (runner, other):
        expect(page.locator("#status")).to_contain_text("wins", timeout=15_000)
        page.locator("#seed").wait_for()
    game.refresh_from_db()
    assert game.status == Game.Status.FINISHED and game.result_reason == "damage"
    # Both warehouses are now drawn for both players: every crate of each.
    for page in (alice, bob):
        for seat in (0, 1):
            rows = game.state["warehouses"][seat]
            box = page.locator(f"[data-grid='open-{1 - seat}']")
            assert box.locator("td.crate").count() == 20
            assert rows == game.state["warehouses"][seat]


# What the page's htmx sends: requests on their way, and the moves sent.
TRACK_REQUESTS = """
window.__inflight = 0;
window.__moves = 0;
document.addEventListener("htmx:beforeRequest", (e) => {
  window.__inflight += 1;
  // Counted down by the request itself: its element may have left the page by then.
  e.detail.xhr.addEventListener("loadend", () => { window.__inflight -= 1; });
  if (e.detail.requestConfig.path.endsWith("/move")) window.__moves += 1;
});
"""


def test_run_the_program_while_a_preview_is_on_its_way_sends_the_move_once(
    browser, live_server, transactional_db
) -> None:
    """Play while a preview is on its way and another waits behind it: one move is sent. The
    waiting preview used to go once the first came back, to the Play button's `formaction`,
    the move's address: a second move, refused as "played already"."""
    from tests.browser.tour import client_for, signed_in
    from tests.worker_fixtures import make_player

    alice, bob = make_player(), make_player()
    game = robot_game(alice, bob)
    set_up(game)
    (seat,) = robotmaze.to_move(game.state)
    context = signed_in(browser, live_server.url, client_for((alice, bob)[seat]))
    try:
        page = context.new_page()
        page.add_init_script(TRACK_REQUESTS)
        page.goto(f"/games/{game.pk}/")
        form = page.locator("#move-form.program-form")
        form.wait_for()
        held: list[Route] = []
        page.route(f"**/games/{game.pk}/draft", lambda route: held.append(route))
        form.locator("select[name=command_1]").select_option("R")
        page.wait_for_function("() => window.__inflight === 1")  # held on its way
        form.locator("select[name=command_2]").select_option("D")  # waits behind it
        page.locator("#play").click()
        page.unroute(f"**/games/{game.pk}/draft")
        for route in held:
            with contextlib.suppress(Error):  # a request the page aborted is gone
                route.continue_()
        page.wait_for_function(
            "() => window.__inflight === 0 && !document.querySelector('.program-form')"
        )
        assert page.evaluate("() => window.__moves") == 1
        expect(page.locator("#game .error")).to_have_count(0)
        game.refresh_from_db()
        assert game.ply == 3  # the two set-ups and the one program
    finally:
        context.close()


def test_crates_tapped_while_one_is_on_its_way_are_all_placed(
    browser, live_server, transactional_db
) -> None:
    """Taps on the warehouse made while the answer to an earlier one is on its way all count,
    and a random warehouse asked for meanwhile is drawn after them. Each tap used to post the
    warehouse as the page had it, and the last answer drawn won: of ten quick taps, some crates
    were lost."""
    from tests.browser.tour import client_for, signed_in
    from tests.worker_fixtures import make_player

    alice, bob = make_player(), make_player()
    game = robot_game(alice, bob)
    context = signed_in(browser, live_server.url, client_for(alice))
    try:
        page = context.new_page()
        page.add_init_script(TRACK_REQUESTS)
        page.goto(f"/games/{game.pk}/")
        page.locator("#move-form.warehouse-editor").wait_for()
        held: list[Route] = []
        page.route(f"**/games/{game.pk}/draft", lambda route: held.append(route))
        cell = page.locator
        page.evaluate(
            "() => { window.__sent = 0;"
            " document.addEventListener('htmx:beforeRequest', () => { window.__sent += 1; }); }"
        )
        cell("#toggle-B1").click()
        page.wait_for_function("() => window.__inflight === 1")  # held on its way
        # Four more taps while it is on its way, one of them twice (placed, then lifted): each
        # shows at once.
        for name in ("B2", "B3", "C1", "B3", "C2"):
            cell(f"#toggle-{name}").click()
        expect(cell("#toggle-C2")).to_have_attribute("aria-pressed", "true")
        expect(cell("#toggle-B3")).to_have_attribute("aria-pressed", "false")
        page.unroute(f"**/games/{game.pk}/draft")
        for route in held:
            with contextlib.suppress(Error):  # unroute may have let it go already
                route.continue_()
        page.wait_for_function("() => window.__inflight === 0")
        expect(page.locator("#crate-count")).to_have_text("4 of 20 crates")
        placed = page.eval_on_selector_all(
            "#move-form button[name=toggle][aria-pressed=true]", "bs => bs.map(b => b.value)"
        )
        assert sorted(placed) == ["B1", "B2", "C1", "C2"], placed
        # The form's warehouse, rows A to J of ten cells each: the same four crates.
        warehouse = page.locator("#move-form input[name=warehouse]").input_value()
        assert warehouse[10:20] == "XX........" and warehouse[20:30] == "XX........", warehouse
        assert warehouse.count("X") == 4, warehouse
        # Two requests in all: the first tap, then the five kept ones together.
        assert page.evaluate("() => window.__sent") == 2

        # A random warehouse drawn while a tap is on its way is drawn after that tap's answer:
        # the answers come back in the order they were asked for, whatever the network does.
        page.route(f"**/games/{game.pk}/draft", lambda route: held.append(route))
        held.clear()
        cell("#toggle-D1").click()
        page.wait_for_function("() => window.__inflight === 1")
        page.locator("#random-warehouse").click()
        page.unroute(f"**/games/{game.pk}/draft")
        for route in reversed(held):
            with contextlib.suppress(Error):
                route.continue_()
        page.wait_for_function("() => window.__inflight === 0 && window.__sent === 4")
        expect(page.locator("#crate-count")).to_have_text("20 of 20 crates")
    finally:
        context.close()


def run_refused(page: Page) -> None:
    """Run the program, and wait for its refusal to be drawn: the page said the same before."""
    with page.expect_response(lambda r: r.url.endswith("/move") and r.status == 409):
        page.locator("#play").click()
    page.wait_for_function(
        "() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')"
    )


def test_a_program_with_a_gap_says_so_as_it_is_chosen(
    browser, live_server, transactional_db
) -> None:
    """Command 2 chosen with command 1 empty: the page says at once, in the error line, that the
    commands go in order with no gap (the gap was closed up and played as another program; and
    a refused preview showed nothing); Run the program says the same, plays nothing and leaves
    the commands as chosen; the program chosen in order previews and takes the error line away.
    A gap made in a previewed program takes its preview away: the form's last program that
    could be read stayed previewed, and the refusal of Run drew that program back into the form
    (the next click ran it)."""
    from tests.browser.tour import client_for, signed_in
    from tests.worker_fixtures import make_player

    alice, bob = make_player(), make_player()
    game = robot_game(alice, bob)
    set_up(game)
    (seat,) = robotmaze.to_move(game.state)
    with signed_in(browser, live_server.url, client_for((alice, bob)[seat])) as context:
        page = context.new_page()
        page.goto(f"/games/{game.pk}/")
        form = page.locator("#move-form.program-form")
        form.locator("select[name=command_2]").select_option("D")
        expect(page.locator("#error")).to_contain_text("Command 1 is empty")
        run_refused(page)
        # The refusal's page is drawn with the form as it was sent.
        expect(page.locator("#error")).to_contain_text("Command 1 is empty")
        expect(form.locator("select[name=command_1]")).to_have_value("")
        expect(form.locator("select[name=command_2]")).to_have_value("D")
        form.locator("select[name=command_1]").select_option("R")
        expect(page.locator("#program-preview")).to_contain_text("R D, once: 2 moves")
        expect(page.locator("#error")).to_have_count(0)  # the refusal is over
        # A gap made in it: no preview of the program before it, and Run draws the gap back.
        form.locator("select[name=command_1]").select_option("")
        expect(page.locator("#error")).to_contain_text("Command 1 is empty")
        expect(page.locator("#program-preview")).not_to_contain_text("R D")
        expect(page.locator("#board .plan")).to_have_count(0)
        run_refused(page)
        expect(page.locator("#error")).to_contain_text("Command 1 is empty")
        expect(form.locator("select[name=command_1]")).to_have_value("")
        expect(form.locator("select[name=command_2]")).to_have_value("D")
        expect(page.locator("#program-preview")).not_to_contain_text("R D")
    game.refresh_from_db()
    assert game.ply == 2
