"""The games by keyboard alone: Tab, the arrow keys, Space and Enter, and no mouse. Two people
play a Corn maze to the end, each choosing the shifts with the arrow keys and seeing the preview
before playing; a person sets up a Robot Maze Race warehouse and runs programs until the game
is over."""

from __future__ import annotations

import hashlib

import pytest
from playwright.sync_api import Page, expect

from games.engines import cornmaze, mazegen, robotmaze
from games.models import Game
from games.play import core
from tests.browser.test_cornmaze_browser import furthest_right
from tests.browser.tour import client_for, signed_in
from tests.test_robotmaze_site import WAREHOUSES, robot_game
from tests.worker_fixtures import make_player

pytestmark = pytest.mark.browser

KEYS = {"N": "ArrowUp", "E": "ArrowRight", "S": "ArrowDown", "W": "ArrowLeft"}
# With the moves of `furthest_right`, this Corn maze lasts three turns.
SEED = hashlib.sha256(b"two guests").digest()


@pytest.fixture
def page_for(browser, live_server):
    """A page signed in as this user, in its own browser context, closed when the test ends:
    a page left open would go on polling the live server after its test."""
    contexts = []

    def make(user) -> Page:
        context = signed_in(browser, live_server.url, client_for(user))
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


def tab_to(page: Page, selector: str, limit: int = 80) -> None:
    """Press Tab until the focus is on an element that matches `selector`."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("(s) => !!document.activeElement?.matches(s)", selector):
            return
    raise AssertionError(f"Tab never reached {selector}")


def focused(page: Page, what: str = "id") -> str:
    return page.evaluate(f"() => document.activeElement?.{what} ?? ''")


def choose_radio(page: Page, name: str, value: str) -> None:
    """Tab into a group of radio buttons, then the arrow keys to the one wanted."""
    tab_to(page, f"input[type=radio][name={name}]")
    page.keyboard.press("Space")
    for _ in range(12):
        if focused(page, "value") == value:
            break
        page.keyboard.press("ArrowRight")
    assert focused(page, "value") == value and focused(page, "checked")


def test_two_people_play_a_corn_maze_by_keyboard(page_for, live_server, transactional_db):
    alice, bob = make_player(), make_player()
    with core.bot_tasks_paused():
        game = core.game_create(
            kind="cornmaze",
            creator=alice,
            options={"size": 6},
            clock_choice="P3D",
            seats=[core.SeatPlan(), core.SeatPlan()],
        )
        Game.objects.filter(pk=game.pk).update(
            seed=SEED, seed_sha256=hashlib.sha256(SEED).hexdigest()
        )
        core.game_join(game_id=game.pk, user=bob)
    pages = {}
    for seat, user in enumerate((alice, bob)):
        pages[seat] = page_for(user)
        pages[seat].goto(f"/games/{game.pk}/")

    for turn in range(10):
        game.refresh_from_db()
        if game.status != Game.Status.ACTIVE:
            break
        (seat,) = cornmaze.to_move(game.state)
        first, second = (cornmaze.column_letter(c) for c in furthest_right(game.state))
        page = pages[seat]
        page.locator("#move-form").wait_for()  # the other's move arrives by polling
        page.locator("body").focus()
        choose_radio(page, "first", first)
        choose_radio(page, "second", second)
        # The server's preview of these shifts, before playing them.
        expect(page.locator("#board-caption")).to_contain_text(f"Preview of {first} then {second}")
        expect(page.locator("#preview-path")).to_have_count(1)
        # And said in the form's live region, which stays while the board is swapped.
        expect(page.locator("#preview-words")).to_contain_text(f"Preview of {first} then {second}")
        tab_to(page, "#play")
        assert (
            page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle") == "solid"
        )
        page.keyboard.press("Enter")
        page.locator(f"#log li[value='{turn + 1}']").wait_for()
    game.refresh_from_db()
    assert game.status == Game.Status.FINISHED and game.ply == 3
    for page in pages.values():
        expect(page.locator("#status")).to_contain_text("wins")


def run_program(page: Page, commands: str, runs: int, *, click: bool = False) -> None:
    """Choose each command by its initial letter (Up, Down, Left, Right), the runs by digit;
    run it by Enter, or with `click` by the mouse."""
    page.locator("#move-form.program-form").wait_for()
    page.locator("body").focus()
    for slot, command in enumerate(commands, start=1):
        tab_to(page, f"#command-{slot}")
        page.keyboard.press(command)
    tab_to(page, "#runs")
    page.keyboard.press(str(runs))
    moves = len(commands) * runs
    expect(page.locator("#program-preview")).to_contain_text(f"{moves} move")
    # The plan is drawn on the robot's own grid before the program runs.
    expect(page.locator("[data-grid^=open] td.bump")).not_to_have_count(0)
    if click:
        page.locator("#play").click()
        return
    tab_to(page, "#play")
    page.keyboard.press("Enter")


def test_a_robot_maze_race_by_keyboard(page_for, live_server, transactional_db):
    alice, bob = make_player(), make_player()
    with core.bot_tasks_paused():
        game = core.game_create(
            kind="robotmaze",
            creator=alice,
            options={},
            clock_choice="P3D",
            seats=[core.SeatPlan(), core.SeatPlan()],
        )
        core.game_join(game_id=game.pk, user=bob)
    page = page_for(alice)
    page.goto(f"/games/{game.pk}/")

    # A crate placed and lifted in the editor: Tab to the grid, arrows, Enter; the keyboard
    # stays on the cell while the page swaps.
    tab_to(page, "table.editor button[name=toggle]")
    assert focused(page) == "toggle-A1"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")
    assert focused(page) == "toggle-B2"
    # Its focus ring is drawn over the cells around it, which used to hide its right and
    # bottom edges: the focused cell is stacked above them.
    stacked = "b => [getComputedStyle(b.closest('td')).zIndex, getComputedStyle(b).outlineStyle]"
    assert page.locator("#toggle-B2").evaluate(stacked) == ["1", "solid"]
    assert page.locator("#toggle-B3").evaluate(stacked) == ["auto", "none"]
    page.keyboard.press("Enter")
    expect(page.locator("#crate-count")).to_have_text("1 of 20 crates")
    expect(page.locator("#toggle-B2")).to_have_attribute("aria-pressed", "true")
    assert focused(page) == "toggle-B2"
    page.keyboard.press("Space")
    expect(page.locator("#crate-count")).to_have_text("0 of 20 crates")
    # A random warehouse, and set up.
    tab_to(page, "#random-warehouse")
    page.keyboard.press("Enter")
    expect(page.locator("#crate-count")).to_have_text("20 of 20 crates")
    tab_to(page, "#play")
    page.keyboard.press("Enter")
    expect(page.locator(".warehouse-editor")).to_have_count(0)
    # The button went with the editor: the keyboard goes on from the status line.
    expect(page.locator("#status")).to_be_focused()

    game.refresh_from_db()
    core.move_submit(
        game_id=game.pk,
        user=bob,
        number=core.move_number(game, 1),
        move={"warehouse": WAREHOUSES[1]},
    )

    def bob_plays() -> None:
        game.refresh_from_db()
        core.move_submit(
            game_id=game.pk, user=bob, number=game.ply, move={"program": "R", "runs": 1}
        )

    game.refresh_from_db()
    if robotmaze.to_move(game.state) == [1]:
        bob_plays()
    run_program(page, "UUUU", 4)  # sixteen walls
    expect(page.locator("#board")).to_contain_text("A1 to the north: wall (damage 16)")
    expect(page.locator("#status")).to_be_focused()  # it is bob's turn: no form
    bob_plays()
    run_program(page, "ULUL", 4, click=True)  # four more: broken down
    expect(page.locator("#status")).to_contain_text("robot broke down", timeout=15_000)
    # A click is not the keyboard: its page is not moved to the status line.
    expect(page.locator("#status")).not_to_be_focused()
    game.refresh_from_db()
    assert game.status == Game.Status.FINISHED and game.result_reason == "damage"


def corridor_seed() -> tuple[bytes, str, str]:
    """A race seed whose a1 opens on a corridor: two steps the same way (`along`), then another
    way on (`turn`). Searched in a fixed order, so the same every run."""
    for n in range(200):
        seed = hashlib.sha256(f"corridor {n}".encode()).digest()
        maze, _ = mazegen.maze_from_seed(seed)
        for along in mazegen.open_directions(maze[mazegen.START]):
            second = mazegen.neighbour(mazegen.START, along)
            assert second is not None
            if not maze[second] & mazegen.BIT[along]:
                continue
            turns = [
                d
                for d in mazegen.open_directions(maze[second])
                if d not in {along, mazegen.OPPOSITE[along]}
            ]
            if turns:
                return seed, along, turns[0]
    raise AssertionError("no seed with a corridor at the start")


def test_a_slow_race_takes_one_step_a_press_however_long_a_key_is_held(
    page_for, live_server, transactional_db
):
    seed, along, turn = corridor_seed()
    alice, bob = make_player(), make_player()
    with core.bot_tasks_paused():
        game = core.game_create(
            kind="mazerace",
            creator=alice,
            options={"mode": "slow"},
            clock_choice="P3D",
            seats=[core.SeatPlan(), core.SeatPlan()],
        )
        Game.objects.filter(pk=game.pk).update(
            seed=seed, seed_sha256=hashlib.sha256(seed).hexdigest()
        )
        core.game_join(game_id=game.pk, user=bob)
    page = page_for(alice)
    page.goto(f"/games/{game.pk}/")
    expect(page.locator("#steer")).to_have_attribute("data-live", "0")

    key = KEYS[along]
    page.keyboard.down(key)
    expect(page.locator("#steer input[name=step]")).to_have_value("1")
    # The key is still down: the browser repeats it (Playwright marks each further keydown as
    # a repeat), and the page waits for a new press, though the way on is open.
    for _ in range(5):
        page.keyboard.down(key)
    page.keyboard.up(key)
    page.keyboard.press(KEYS[turn])
    expect(page.locator("#steer input[name=step]")).to_have_value("2")
    game.refresh_from_db()
    runner = game.state["runners"][0]
    start = mazegen.START
    second = mazegen.neighbour(start, along)
    assert second is not None
    third = mazegen.neighbour(second, turn)
    assert runner["path"] == [mazegen.NAMES[c] for c in (start, second, third)]


# Safari before 15.4: `matches(":focus-visible")` throws a SyntaxError.
NO_FOCUS_VISIBLE = """
const matches = Element.prototype.matches;
Element.prototype.matches = function (selector) {
  if (selector.includes(":focus-visible")) throw new SyntaxError("':focus-visible' is not valid");
  return matches.call(this, selector);
};
"""


def test_a_browser_without_focus_visible_still_goes_on_from_the_status_line(
    page_for, live_server, transactional_db
):
    alice = make_player()
    game = robot_game(alice, make_player())
    page = page_for(alice)
    page.add_init_script(NO_FOCUS_VISIBLE)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"/games/{game.pk}/")
    tab_to(page, "#random-warehouse")
    page.keyboard.press("Enter")
    expect(page.locator("#crate-count")).to_have_text("20 of 20 crates")
    tab_to(page, "#play")
    page.keyboard.press("Enter")
    expect(page.locator(".warehouse-editor")).to_have_count(0)
    expect(page.locator("#status")).to_be_focused()
    assert errors == []
