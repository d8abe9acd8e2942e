"""A person races a bot in Chromium, steering with the keyboard (single presses, and a held key
down a corridor), while a real Celery worker runs the race's clock: the bot's steps and the
close. The results page shows the places and the whole maze. And a key held down a long
corridor steps at the fixed speed, each step sent once with its own number."""

from __future__ import annotations

import hashlib
import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs

import pytest
import time_machine
from django.conf import settings
from playwright.sync_api import Page, expect

from games.engines import mazegen
from games.engines import mazerace as rules
from games.models import Game, Move
from games.play.paces import race
from tests import test_mazerace_site as site
from tests.browser.test_accessibility_browser import AXE, axe_violations
from tests.test_mazerace_site import client_for, make_race, way_out
from tests.worker_fixtures import Queued, WorkerProcess, wait_until

pytestmark = pytest.mark.browser

KEYS = {"N": "ArrowUp", "E": "ArrowRight", "S": "ArrowDown", "W": "ArrowLeft"}
WASD = {"N": "w", "E": "d", "S": "s", "W": "a"}
SHOTS = Path(settings.BASE_DIR) / "test-artifacts"


def runner(game: Game, seat: int) -> dict:
    game.refresh_from_db()
    assert game.state is not None
    return game.state["runners"][seat]


def settled(page: Page, game: Game) -> dict:
    """Wait until the page shows the runner where the database has it, and it stays there."""
    last = None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        now = runner(game, 0)
        if now["out"]:
            return now
        marker = page.locator(".runner[data-runner='0']")
        shown = marker.get_attribute("data-cell") if marker.count() else None
        if last is not None and now == last and shown == now["at"]:
            return now
        last = now
        time.sleep(0.3)
    raise AssertionError("the page did not settle")


def test_a_live_race_is_offered_no_clock_options_and_a_slow_one_keeps_them(new_page) -> None:
    page = new_page()
    page.goto("/new/mazerace/")
    bank, weekends = page.locator("select[name=bank]"), page.locator("input[name=weekends_off]")
    page.select_option("select[name=race]", "P3D")
    expect(bank).to_be_visible()
    expect(page.locator("#id_bank_helptext")).to_contain_text("added once to the race's clock")
    bank.select_option("7")
    weekends.check()
    # A bank chosen for a slow race and then a live race: the live race is made, with none.
    page.select_option("select[name=race]", "live")
    expect(bank).to_be_hidden()
    expect(weekends).to_be_hidden()
    expect(page.locator("#id_bank_helptext")).to_be_hidden()
    page.click("text=Create the game")
    page.wait_for_url("**/games/*/")
    live = Game.objects.get()
    assert (live.clock, live.clock_options) == ("live", {})

    page.goto("/new/mazerace/")
    page.select_option("select[name=race]", "P30D")
    page.select_option("select[name=bank]", "14")
    page.click("text=Create the game")
    page.wait_for_url("**/games/*/")
    slow = Game.objects.exclude(pk=live.pk).get()
    assert (slow.clock, slow.clock_options) == ("P30D", {"bank_days": 14})


@pytest.mark.worker
def test_a_person_races_a_bot_with_the_keyboard_to_the_end(
    new_page, celery_worker_process: WorkerProcess
) -> None:
    page = new_page()
    page.goto("/new/mazerace/")
    page.select_option("select[name=race]", "live")
    page.fill("input[name=seats]", "2")
    page.select_option("select[name=seat_1]", "flood")
    page.click("text=Create the game")
    page.wait_for_url("**/games/*/")
    game = Game.objects.get()
    expect(page.locator("#status")).to_contain_text("Waiting for every runner to press Ready")
    expect(page.locator("#strip")).to_contain_text("Bot (flood)")

    page.locator("#ready").click()
    expect(page.locator("#countdown")).to_contain_text("the race starts in")
    game.refresh_from_db()
    assert game.race_starts_at is not None
    wait_until(lambda: datetime.now(UTC) >= game.race_starts_at, timeout=10, what="the start")
    # The bot runs on the worker's clock: its steps show in the strip as the page polls.
    expect(page.locator("#strip li[data-seat='1'] .steps")).not_to_have_text("0 steps")

    # Walls are refused on the page: a1 has walls north and west.
    page.keyboard.press("ArrowUp")
    expect(page.locator("#steer-note")).to_have_text("There is a wall to the north.")
    assert runner(game, 0)["steps"] == 0

    shot = False
    presses = 0
    while not runner(game, 0)["out"]:
        route = way_out(game, 0)
        run = 1
        while run < len(route) and route[run] == route[0]:
            run += 1
        before = runner(game, 0)["steps"]
        if run >= 3:
            # Held down a corridor: it keeps stepping, one step every 250 ms.
            page.keyboard.down(KEYS[route[0]])
            wait_until(
                lambda: runner(game, 0)["steps"] >= before + run - 1,  # noqa: B023
                timeout=10,
                what="the held key to step",
            )
            page.keyboard.up(KEYS[route[0]])
        else:
            keys = WASD if presses % 2 else KEYS
            page.keyboard.press(keys[route[0]])
            presses += 1
            wait_until(
                lambda: runner(game, 0)["steps"] > before,  # noqa: B023
                timeout=10,
                what="a step",
            )
        now = settled(page, game)
        if not shot and now["steps"] >= 8 and not now["out"]:
            SHOTS.mkdir(exist_ok=True)
            page.screenshot(path=SHOTS / "mazerace-running.png", full_page=True)
            shot = True
    person = runner(game, 0)
    # Never faster than the fixed speed: 250 ms between landings.
    assert person["steps"] >= len(way_out_from_start(game))
    assert person["landed_ms"] >= (person["steps"] - 1) * rules.STEP_MS

    # The worker ends the race: when the bot is out too, or 30 s after the first exit.
    expect(page.locator("#results")).to_be_visible(timeout=45_000)
    game.refresh_from_db()
    assert game.status == "finished"
    places = dict(game.seats.values_list("index", "place"))
    assert sorted(places.values()) in ([1, 2], [1, 1])
    results = page.locator("#results tbody tr")
    expect(results).to_have_count(2)
    expect(page.locator("#results")).to_contain_text("Bot (flood)")
    winner = 0 if places[0] == 1 else 1
    expect(results.first).to_have_attribute("data-seat", str(winner))
    # The whole maze is revealed, with both runners' paths, and the seed.
    expect(page.locator("#maze rect[data-open]")).to_have_count(mazegen.CELLS)
    expect(page.locator("#maze polyline.path")).to_have_count(2)
    expect(page.locator("#seed")).to_have_text(game.seed_hex)
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SHOTS / "mazerace-results.png", full_page=True)
    assert "race_tick" in celery_worker_process.output()


def way_out_from_start(game: Game) -> list[int]:
    maze = rules.maze_of(game.state)
    return [0] * mazegen.distances(maze, mazegen.START)[mazegen.EXIT]


# From a1 this maze runs straight south to a15: 14 steps, then a wall (found by searching seeds).
CORRIDOR_SEED = hashlib.sha256(b"corridor 5").digest()
CORRIDOR = 14


def test_a_held_key_steps_at_the_fixed_speed_and_sends_each_step_once(
    new_page, live_server, queued: Queued
) -> None:
    game = make_race(2, seed=CORRIDOR_SEED)
    maze = rules.maze_of(game.state)
    column_a = [maze[row * mazegen.SIZE] & mazegen.BIT["S"] for row in range(mazegen.SIZE)]
    assert all(column_a[:CORRIDOR]) and not column_a[CORRIDOR]  # the maze the seed gives
    page = new_page()
    session = client_for(game.seats.get(index=0).user).cookies[settings.SESSION_COOKIE_NAME]
    page.context.add_cookies(
        [{"name": session.key, "value": session.value, "url": live_server.url}]
    )
    # Every step the page sends: its step number, and how many were in flight at once.
    posted: list[int] = []
    answers: list[int] = []
    flying = {"now": 0, "most": 0}

    def sent(request) -> None:  # type: ignore[no-untyped-def]
        if request.method == "POST" and request.url.endswith("/move"):
            posted.append(int(parse_qs(request.post_data)["step"][0]))
            flying["now"] += 1
            flying["most"] = max(flying["most"], flying["now"])

    def answered(response) -> None:  # type: ignore[no-untyped-def]
        if response.request.method == "POST" and response.url.endswith("/move"):
            answers.append(response.status)
            flying["now"] -= 1

    page.on("request", sent)
    page.on("response", answered)
    page.goto(f"/games/{game.pk}/")
    race.race_ready(game_id=game.pk, user=game.seats.get(index=1).user)
    page.locator("#ready").click()
    expect(page.locator("#countdown")).to_contain_text("the race starts in")
    game.refresh_from_db()
    assert game.race_starts_at is not None
    wait_until(lambda: datetime.now(UTC) >= game.race_starts_at, timeout=10, what="the start")

    page.keyboard.down("ArrowDown")
    # At a15 the wall stops the held key on the page, which sends nothing more.
    expect(page.locator("#steer-note")).to_have_text(
        "There is a wall to the south.", timeout=20_000
    )
    expect(page.locator(".runner[data-runner='0']")).to_have_attribute("data-cell", "a15")
    page.keyboard.up("ArrowDown")

    steps = list(Move.objects.filter(game=game, seat=0).order_by("ply"))
    assert [m.move["dir"] for m in steps] == ["S"] * CORRIDOR
    assert [m.outcome["at"] for m in steps] == [f"a{row}" for row in range(2, CORRIDOR + 2)]
    # Each step sent once, numbered in order, one at a time, and each taken.
    assert posted == list(range(CORRIDOR))
    assert answers == [200] * CORRIDOR
    assert flying["most"] == 1
    # Landed at the fixed speed: never two within 250 ms. (Never one sent too early either:
    # a step asked for while another waits would be refused, and none was.)
    landings = [m.outcome["landed_ms"] for m in steps]
    assert all(b - a >= rules.STEP_MS for a, b in zip(landings, landings[1:], strict=False))


def test_the_results_on_a_phone_fit_it_never_break_a_number_and_keep_their_rows_short(
    new_page,
) -> None:
    """Four runners' results at 375 px fit the screen: neither the page nor the table's box
    scrolls sideways (the six columns were 557 px wide, the last two out of sight until the
    box was scrolled); each time, step count and cells covered stays on one line (a time used
    to break as "11.7 / 5 s") and says what it counts, and the words of "how" take three lines
    at most (squeezed, they took one line a word)."""
    with time_machine.travel(site.T0, tick=False):
        game = site.make_race(4)
        site.ready_all(game)
    out = site.run_out(game, 0, 100)
    with site.at(game, 300):
        site.step(game, 1, site.an_open_way(game, 1))
    with site.at(game, out + rules.CLOSE_AFTER_MS):
        race.race_advance(game_id=game.pk)
    assert Game.objects.get(pk=game.pk).status == "finished"

    page = new_page()
    page.set_viewport_size({"width": 375, "height": 800})
    page.goto(game.get_absolute_url())
    expect(page.locator("#results tbody tr")).to_have_count(4)
    page.screenshot(path=SHOTS / "mazerace-results-phone.png", full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    box = page.locator("#results").locator("xpath=..")
    assert box.evaluate("box => box.scrollWidth <= box.clientWidth"), box.evaluate(
        "box => [box.scrollWidth, box.clientWidth]"
    )
    first = page.locator("#results tbody tr").first
    expect(first.locator("td.num").nth(1)).to_have_text(re.compile(r"^\d+ steps?$"))
    expect(first.locator("td.num").nth(2)).to_have_text(re.compile(r"^\d+ cells? covered$"))
    lines = page.locator("#results td.num, #results td.how").evaluate_all(
        """cells => cells.map(cell => {
            const range = document.createRange();
            range.selectNodeContents(cell);
            const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
            return [cell.className, cell.textContent, tops.size];
        })"""
    )
    assert len(lines) == 4 * 4
    for kind, text, count in lines:
        assert count <= (3 if kind == "how" else 1), (text, count)


PHONE = {"width": 375, "height": 740}


def runner_page(
    new_page, live_server, game: Game, viewport: dict[str, int], fake_clock: bool = False
) -> Page:
    """The race's page for its first runner, signed in, at this size; with `fake_clock`, the
    page's timers are Playwright's, to be paused."""
    page = new_page()
    page.set_viewport_size(viewport)
    if fake_clock:
        page.clock.install()
    session = client_for(game.seats.get(index=0).user).cookies[settings.SESSION_COOKIE_NAME]
    page.context.add_cookies(
        [{"name": session.key, "value": session.value, "url": live_server.url}]
    )
    page.goto(f"/games/{game.pk}/")
    return page


@pytest.mark.parametrize(
    ("viewport", "last_ready"),
    [
        (PHONE, "this runner"),
        ({"width": 390, "height": 844}, "the other runner"),
        ({"width": 1280, "height": 900}, "this runner"),
    ],
)
def test_a_runner_sees_its_whole_maze_when_the_race_starts_and_steers_there(
    new_page, live_server, queued: Queued, viewport: dict[str, int], last_ready: str
) -> None:
    """On a phone the Ready button is below the maze, out of sight: the page scrolled down to
    it used to stay there through the countdown and the race, the maze above the screen. When
    the countdown begins (this runner's own Ready, or the other's seen by the poll) the whole
    maze is in view, and the keys and a swipe on it steer. A desktop's page is not moved."""
    game = make_race(2)
    page = runner_page(new_page, live_server, game, viewport)
    other = game.seats.get(index=1).user
    if last_ready == "this runner":
        race.race_ready(game_id=game.pk, user=other)
    page.locator("#ready").click()
    if last_ready == "the other runner":
        expect(page.locator("#status")).to_contain_text("you are ready")
        race.race_ready(game_id=game.pk, user=other)
    expect(page.locator("#countdown")).to_contain_text("the race starts in")
    game.refresh_from_db()
    assert game.race_starts_at is not None
    wait_until(lambda: datetime.now(UTC) >= game.race_starts_at, timeout=10, what="the start")

    maze = page.locator("#maze-board svg")
    expect(maze).to_be_in_viewport(ratio=1)
    box = maze.bounding_box()
    assert box is not None
    assert box["y"] >= 0 and box["y"] + box["height"] <= viewport["height"], box
    if viewport["width"] > 760:
        assert page.evaluate("window.scrollY") == 0
    page.screenshot(path=SHOTS / f"mazerace-started-{viewport['width']}.png")

    # The arrow keys steer (and do not scroll the page)...
    page.keyboard.press(KEYS[site.an_open_way(game, 0)])
    wait_until(lambda: runner(game, 0)["steps"] == 1, timeout=10, what="the key's step")
    settled(page, game)
    # ... and so does a swipe across the maze, by touch.
    way = site.an_open_way(game, 0)
    dx, dy = {"N": (0, -60), "E": (60, 0), "S": (0, 60), "W": (-60, 0)}[way]
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    cdp = page.context.new_cdp_session(page)
    cdp.send("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 1})
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
    cdp.send(
        "Input.dispatchTouchEvent",
        {"type": "touchMove", "touchPoints": [{"x": x + dx, "y": y + dy}]},
    )
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    wait_until(lambda: runner(game, 0)["steps"] == 2, timeout=10, what="the swipe's step")
    settled(page, game)
    expect(maze).to_be_in_viewport(ratio=1)


def test_a_swipe_is_a_step_when_the_maze_is_drawn_anew_under_the_finger(
    new_page, live_server, queued: Queued
) -> None:
    """In a live race the board is drawn anew several times a second (the others' steps). A
    touch keeps its first target, which a swap took out of the page: the end of the swipe was
    not heard, and the step was lost."""
    game = make_race(2)
    page = runner_page(new_page, live_server, game, PHONE)
    race.race_ready(game_id=game.pk, user=game.seats.get(index=1).user)
    page.locator("#ready").click()
    expect(page.locator("#countdown")).to_contain_text("the race starts in")
    game.refresh_from_db()
    assert game.race_starts_at is not None
    wait_until(lambda: datetime.now(UTC) >= game.race_starts_at, timeout=10, what="the start")
    maze = page.locator("#maze-board svg")
    expect(maze).to_be_in_viewport(ratio=1)
    settled(page, game)
    box = maze.bounding_box()
    assert box is not None
    way = site.an_open_way(game, 0)
    dx, dy = {"N": (0, -60), "E": (60, 0), "S": (0, 60), "W": (-60, 0)}[way]
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    cdp = page.context.new_cdp_session(page)
    cdp.send("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 1})
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
    # The board drawn anew under the finger, as a swap does.
    page.evaluate(
        "() => { const b = document.getElementById('maze-board'); b.outerHTML = b.outerHTML; }"
    )
    cdp.send(
        "Input.dispatchTouchEvent",
        {"type": "touchMove", "touchPoints": [{"x": x + dx, "y": y + dy}]},
    )
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    wait_until(lambda: runner(game, 0)["steps"] == 1, timeout=10, what="the swipe's step")


def race_against_a_bot(new_page, live_server, viewport: dict[str, int]) -> tuple[Game, Page]:
    """A live race of this runner against a bot (the hint is only for such a race), started,
    on a page of this size. No worker runs: the bot steps when the test says."""
    game = make_race(1, bots=("wall",))
    page = runner_page(new_page, live_server, game, viewport)
    page.locator("#ready").click()
    expect(page.locator("#countdown")).to_contain_text("the race starts in")
    game.refresh_from_db()
    assert game.race_starts_at is not None
    wait_until(lambda: datetime.now(UTC) >= game.race_starts_at, timeout=10, what="the start")
    return game, page


def reloaded_scrolled_down(page: Page) -> None:
    """The runner scrolls down (to the chat, say) and reloads the page."""
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    page.reload()
    expect(page.locator("#board")).to_have_attribute("data-phase", "running")


@pytest.mark.parametrize("stepped", [False, True], ids=["before-any-step", "after-steps"])
def test_a_runner_who_reloads_mid_race_on_a_phone_sees_the_maze_the_pad_and_the_hint(
    new_page, live_server, queued: Queued, stepped: bool
) -> None:
    """Only the start of the race brought the maze into view: a page loaded during the race
    stood where the browser put it back, or at its top, where the maze's bottom was below the
    screen while the Abort button (until somebody's first step) was above it. And the Hint was
    under the pad and its help, never in sight while racing on a phone. Now the pad, with the
    Hint beside it, comes right under the maze, and a page loaded while the race runs shows
    all three; the hint's answer shows beside its button."""
    game, page = race_against_a_bot(new_page, live_server, PHONE)
    if stepped:
        page.keyboard.press(KEYS[site.an_open_way(game, 0)])
        wait_until(lambda: runner(game, 0)["steps"] == 1, timeout=10, what="the key's step")
        race.race_advance(game_id=game.pk)
        assert runner(game, 1)["steps"] >= 1
        settled(page, game)
    page.context.add_init_script(path=AXE)
    reloaded_scrolled_down(page)

    expect(page.locator("#abort")).to_have_count(0 if stepped else 1)
    expect(page.locator("#maze-board svg")).to_be_in_viewport(ratio=1)
    expect(page.locator("#steer .pad")).to_be_in_viewport(ratio=1)
    expect(page.locator("#hint")).to_be_in_viewport(ratio=1)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(
        path=SHOTS
        / f"mazerace-reloaded-{PHONE['width']}-{'stepped' if stepped else 'at-start'}.png"
    )

    page.locator("#hint").click()
    expect(page.locator("#hint-text")).to_contain_text("The strong bot would go")
    expect(page.locator("#hint-text")).to_be_in_viewport(ratio=1)
    expect(page.locator("#maze-board svg")).to_be_in_viewport(ratio=1)
    assert not axe_violations(page), axe_violations(page)


def test_on_a_desktop_the_hint_is_beside_the_pad_and_a_reload_mid_race_shows_them_all(
    new_page, live_server, queued: Queued
) -> None:
    """At 1280x900 the maze and the pad stand side by side as they did, and the Hint is beside
    the pad (it was under the pad's help). A reload mid-race, the page scrolled down, showed
    the page where it was, half the maze above the screen: now it opens at the top, the maze,
    the pad and the Hint in view. The Tab key goes from the pad to the Hint, then Resign."""
    viewport = {"width": 1280, "height": 900}
    game, page = race_against_a_bot(new_page, live_server, viewport)
    race.race_advance(game_id=game.pk)
    assert runner(game, 1)["steps"] >= 1
    reloaded_scrolled_down(page)

    maze, pad, hint = (
        page.locator("#maze-board svg"),
        page.locator("#steer .pad"),
        page.locator("#hint"),
    )
    for part in (maze, pad, hint):
        expect(part).to_be_in_viewport(ratio=1)
    assert page.evaluate("window.scrollY") == 0
    m, p, h = maze.bounding_box(), pad.bounding_box(), hint.bounding_box()
    assert m is not None and p is not None and h is not None
    assert p["x"] >= m["x"] + m["width"], (m, p)
    # Right of the pad, level with its top row.
    assert h["x"] >= p["x"] + p["width"] and p["y"] <= h["y"] < p["y"] + p["height"] / 3, (p, h)
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SHOTS / f"mazerace-reloaded-{viewport['width']}.png")

    page.locator("#steer .pad button:enabled").last.focus()
    page.keyboard.press("Tab")
    expect(hint).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.locator(".resign button")).to_be_focused()


SMALL_PHONE = {"width": 375, "height": 667}
DESKTOP = {"width": 1280, "height": 900}


def top(page: Page, selector: str) -> float:
    box = page.locator(selector).bounding_box()
    assert box is not None
    return box["y"]


# Where the status line is and whether it is all on the screen, nothing drawn over it: the
# element at each corner (a pixel in) and at its middle is the line or a part of it.
STATUS_SEEN = """() => {
    const status = document.getElementById("status");
    const box = status.getBoundingClientRect();
    const points = [
        [box.left + 1, box.top + 1], [box.right - 1, box.top + 1],
        [box.left + 1, box.bottom - 1], [box.right - 1, box.bottom - 1],
        [(box.left + box.right) / 2, (box.top + box.bottom) / 2],
    ];
    const covered = points.filter(([x, y]) => {
        const found = document.elementFromPoint(x, y);
        return !found || !status.contains(found);
    });
    return {
        text: status.textContent.trim(),
        box: [box.left, box.top, box.right, box.bottom],
        inside: box.height > 0 && box.top >= 0 && box.left >= 0
            && box.bottom <= window.innerHeight && box.right <= window.innerWidth,
        covered: covered,
    };
}"""


@pytest.mark.parametrize(
    ("viewport", "shown_by"),
    [(SMALL_PHONE, "the start"), (SMALL_PHONE, "a reload"), (DESKTOP, "the start")],
    ids=["phone-start", "phone-reload", "desktop-start"],
)
def test_the_status_line_the_maze_and_the_pad_stay_in_view_and_in_place_at_the_first_step(
    new_page, live_server, queued: Queued, viewport: dict[str, int], shown_by: str
) -> None:
    """The Abort button (until somebody's first step) stood above the maze: the first step
    took it away, and the maze the runner was steering in jumped up, 87 px on a phone (38 px
    on a desktop). It stands with Resign now, under the pad, and the maze stays put. On a
    phone the sentence under the maze then grew from one line ("a1: Start.") to two, and the
    pad under it went 21 px down, its bottom row under the screen: it keeps its place too.

    And at 375x667 the header's links, the runners' names and the Abort button stood between
    the status line and the maze: with the maze and the pad brought into view, the status line
    (the countdown, the race's time, the deadline) was above the screen, and still was once the
    Abort button had gone (at 740 px high, clipped). Now it stands right above the maze on a
    phone, and is wholly on the screen, nothing over it, with the Abort button and after it; on
    a desktop it is where it was."""
    game, page = race_against_a_bot(new_page, live_server, viewport)
    if shown_by == "a reload":
        reloaded_scrolled_down(page)
    name = f"mazerace-abort-{viewport['width']}x{viewport['height']}-{shown_by.split()[-1]}"
    SHOTS.mkdir(exist_ok=True)
    place = None
    for stepped in (False, True):
        if stepped:
            page.keyboard.press(KEYS[site.an_open_way(game, 0)])
            wait_until(lambda: runner(game, 0)["steps"] == 1, timeout=10, what="the key's step")
            settled(page, game)
        expect(page.locator("#abort")).to_have_count(0 if stepped else 1)
        page.screenshot(path=SHOTS / f"{name}{'-stepped' if stepped else ''}.png")
        for part in ("#maze-board svg", "#steer .pad"):
            expect(page.locator(part)).to_be_in_viewport(ratio=1)
        seen = page.evaluate(STATUS_SEEN)
        assert seen["inside"] and not seen["covered"], seen
        assert seen["text"], seen
        now = (top(page, "#maze-board svg"), top(page, "#steer .pad"))
        assert place is None or now == place, (place, now)
        place = now
    # Right above the maze on a phone; under the game's name on a desktop, as it was.
    status = page.locator("#status").bounding_box()
    assert status is not None
    if viewport["width"] > 760:
        assert status["y"] < top(page, "#clocks")
    else:
        assert 0 <= top(page, "#maze-board") - (status["y"] + status["height"]) <= 40, status


@pytest.mark.parametrize("viewport", [SMALL_PHONE, DESKTOP], ids=["phone", "desktop"])
def test_a_refused_step_says_why_under_the_maze_and_moves_nothing(
    new_page, live_server, queued: Queued, viewport: dict[str, int]
) -> None:
    """A step the site refused said why in the page's error line, above the runners: off a
    phone's screen while steering, and it pushed the maze and the pad down (119 px at 375x667),
    the pad's lower row under the screen. And a wall the page refused itself said so under the
    pad's help, under the screen. Both say it over the sentence under the maze now, in sight,
    and nothing moves, until the next step."""
    game, page = race_against_a_bot(new_page, live_server, viewport)
    place = (top(page, "#maze-board svg"), top(page, "#steer .pad"))
    wall = page.locator("#steer button[name=dir][disabled]").first.get_attribute("value")
    assert wall is not None
    page.keyboard.press(KEYS[wall])
    note = page.locator("#steer-note")
    expect(note).to_have_text(f"There is a wall to the {rules.WORDS[wall]}.")
    expect(note).to_be_in_viewport(ratio=1)
    assert (top(page, "#maze-board svg"), top(page, "#steer .pad")) == place
    # The site refuses a step sent twice (a retry, say), each sent as the page sends a step.
    page.evaluate(
        """async (open) => {
            const number = document.getElementById("steer").elements.step.value;
            const send = () => {
                const form = document.getElementById("steer");
                return htmx.ajax("POST", form.getAttribute("action"), {source: form,
                    target: "#game", swap: "outerHTML", values: {dir: open, step: number}});
            };
            await send();
            await send();
        }""",
        site.an_open_way(game, 0),
    )
    assert runner(game, 0)["steps"] == 1
    expect(note).to_have_text(rules.Rules.STALE_MOVE)
    expect(note).to_be_in_viewport(ratio=1)
    expect(page.locator("#error-line")).to_be_empty()
    assert (top(page, "#maze-board svg"), top(page, "#steer .pad")) == place
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SHOTS / f"mazerace-refused-{viewport['width']}.png")
    # The runner's next step takes it away.
    page.keyboard.press(KEYS[site.an_open_way(game, 0)])
    expect(note).to_be_hidden()
    wait_until(lambda: runner(game, 0)["steps"] == 2, timeout=10, what="the next step")
    assert (top(page, "#maze-board svg"), top(page, "#steer .pad")) == place


def test_on_a_phone_the_deadline_coming_moves_neither_the_maze_nor_the_pad(
    new_page, live_server, queued: Queued
) -> None:
    """Once a runner is out, the status line tells the others their deadline too ("Racing for
    9 s. Deadline: 29 s left for the runners still in."): two lines on a phone, where the
    status line stands right above the maze, which it pushed a line down, and the pad's bottom
    row under the screen. While steering on a phone it keeps room for two lines."""
    # The other runner has run all but its last step to the exit, in the race's first seconds.
    game = make_race(2)
    steps = len(way_out(game, 1))
    with time_machine.travel(datetime.now(UTC) - race.COUNTDOWN - timedelta(seconds=2 + steps / 4)):
        site.ready_all(game)
    way = way_out(game, 1)
    for i, direction in enumerate(way[:-1]):
        with site.at(game, 100 + i * rules.STEP_MS):
            site.step(game, 1, direction)
    page = runner_page(new_page, live_server, game, SMALL_PHONE)
    expect(page.locator("#board")).to_have_attribute("data-phase", "running")
    expect(page.locator("#deadline")).to_have_count(0)
    maze, pad = top(page, "#maze-board svg"), top(page, "#steer .pad")

    with site.at(game, 100 + (len(way) - 1) * rules.STEP_MS):
        site.step(game, 1, way[-1])
    expect(page.locator("#deadline")).to_contain_text("s left for the runners still in")
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SHOTS / "mazerace-deadline-375x667.png")
    assert (top(page, "#maze-board svg"), top(page, "#steer .pad")) == (maze, pad)
    seen = page.evaluate(STATUS_SEEN)
    assert seen["inside"] and not seen["covered"], seen
    for part in ("#maze-board svg", "#steer .pad"):
        expect(page.locator(part)).to_be_in_viewport(ratio=1)


# The element that has the focus: its name, whether it is in the game's part of the page, and
# where it is seen from the page's top (a steering button or the Hint: their row's top, as the
# pad and the Hint beside it are one row).
FOCUSED = """() => {
    const el = document.activeElement;
    const row = el.closest(".steer-row");
    return {
        name: el.id || el.getAttribute("aria-label") || el.textContent.trim().slice(0, 40),
        game: !!el.closest("#game"),
        strip: !!el.closest("#strip"),
        top: (row || el).getBoundingClientRect().top + window.scrollY,
    };
}"""

PAD_BOXES = """buttons => buttons.map(b => {
    const box = b.getBoundingClientRect();
    return [b.value, Math.round(box.top), Math.round(box.left)];
})"""


@pytest.mark.parametrize("viewport", [SMALL_PHONE, DESKTOP], ids=["phone", "desktop"])
def test_the_tab_key_goes_through_a_race_page_in_the_order_it_is_seen(
    new_page, live_server, queued: Queued, viewport: dict[str, int]
) -> None:
    """On a phone the strip of runners stands under the pad, but it came before it in the
    page (CSS order), so the Tab key went from the runners' names above the maze down to the
    strip's, then back up to the pad (on a desktop too, from the strip under the maze up to
    the pad beside it); and the pad's buttons came north, east, south, west, not in the order
    they are seen. Now the Tab key goes from the top of the page down through the game, never
    back up: the steering buttons row by row, the Hint beside them, then what is under them.
    No element has a tabindex above 0."""
    _, page = race_against_a_bot(new_page, live_server, viewport)
    positive = "[...document.querySelectorAll('[tabindex]')].filter(e => e.tabIndex > 0).length"
    assert page.evaluate(positive) == 0
    pad = page.locator("#steer .pad button").evaluate_all(PAD_BOXES)
    assert [b[0] for b in pad] == [b[0] for b in sorted(pad, key=lambda b: (b[1], b[2]))], pad

    page.locator(".skip-link").focus()
    stops: list[dict] = []
    for _ in range(60):
        page.keyboard.press("Tab")
        stop = page.evaluate(FOCUSED)
        if stops and not stop["game"]:
            break
        if stop["game"]:
            stops.append(stop)
    names = [s["name"] for s in stops]
    enabled = page.locator("#steer .pad button:enabled").evaluate_all("bs => bs.map(b => b.id)")
    assert enabled and [n for n in names if n.startswith("step-")] == enabled, names
    assert names.index("hint") == names.index(enabled[-1]) + 1, names
    strip = [i for i, s in enumerate(stops) if s["strip"]]
    assert strip and min(strip) > names.index("hint"), names
    tops = [round(s["top"]) for s in stops]
    assert all(b >= a - 4 for a, b in zip(tops, tops[1:], strict=False)), list(
        zip(names, tops, strict=True)
    )


def corridor_race_paused(new_page, live_server) -> tuple[Game, Page]:
    """A live race in the corridor maze, started, on a phone whose page's time then stands
    still: its timers run only when the test says. The page notes each step it sends, in
    `window.sent`, as it sends it."""
    game = make_race(2, seed=CORRIDOR_SEED)
    page = runner_page(new_page, live_server, game, PHONE, fake_clock=True)
    race.race_ready(game_id=game.pk, user=game.seats.get(index=1).user)
    page.locator("#ready").click()
    expect(page.locator("#countdown")).to_contain_text("the race starts in")
    game.refresh_from_db()
    assert game.race_starts_at is not None
    wait_until(lambda: datetime.now(UTC) >= game.race_starts_at, timeout=10, what="the start")
    page.clock.pause_at(page.evaluate("Date.now()") + 5_000)
    page.evaluate(
        """() => {
            window.sent = [];
            document.addEventListener("htmx:beforeRequest", event => {
                const config = event.detail.requestConfig;
                if (config.verb === "post" && config.path.endsWith("/move")) {
                    window.sent.push(config.parameters.dir);
                }
            });

        }"""
    )
    return game, page


def at(page: Page, cell: str) -> None:
    expect(page.locator(".runner[data-runner='0']")).to_have_attribute("data-cell", cell)


PRESS = """(button, name) => button.dispatchEvent(
    new PointerEvent(name, { bubbles: true, pointerType: "touch", isPrimary: true })
)"""


def test_a_tap_on_a_steering_button_is_one_step_when_its_click_comes_late(
    new_page, live_server, queued: Queued
) -> None:
    """A tap is a press and the click it makes. The click comes as its own task after the
    pointerup; when a timer ran between them (the page's own, set to tell the press's click
    from another), it was taken for a second click, and the tap made two steps (5 taps in
    about 135 at 375 px)."""
    game, page = corridor_race_paused(new_page, live_server)
    south = page.locator("#steer button[name=dir][value=S]")
    south.evaluate(PRESS, "pointerdown")
    south.evaluate(PRESS, "pointerup")
    page.clock.run_for(1)
    south.evaluate(
        "b=>b.dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true, detail: 1}))"
    )
    at(page, "a2")
    page.clock.run_for(2_000)
    assert page.evaluate("window.sent") == ["S"]
    assert [m.move["dir"] for m in Move.objects.filter(game=game, seat=0)] == ["S"]

    # A click from the keyboard (Enter on the button, detail 0) is a step of its own.
    south.focus()
    page.keyboard.press("Enter")
    at(page, "a3")
    page.clock.run_for(2_000)
    assert page.evaluate("window.sent") == ["S", "S"]


def test_a_press_shorter_than_a_hold_is_one_step_and_a_held_button_keeps_stepping(
    new_page, live_server, queued: Queued
) -> None:
    """A press became a hold at once, and a hold steps again as soon as the last step lands
    (250 ms): a tap a little slow, of 150 ms or so, made two or three steps. Now a press
    holds from 300 ms on."""
    game, page = corridor_race_paused(new_page, live_server)
    south = page.locator("#steer button[name=dir][value=S]")
    south.evaluate(PRESS, "pointerdown")
    at(page, "a2")
    page.clock.run_for(280)  # the step has landed; the press is not yet a hold
    south.evaluate(PRESS, "pointerup")
    page.clock.run_for(2_000)
    assert page.evaluate("window.sent") == ["S"]

    # Held, it keeps stepping down the corridor, each step sent once its last has landed.
    south.evaluate(PRESS, "pointerdown")
    at(page, "a3")
    marker = page.locator(".runner[data-runner='0']")
    deadline = time.monotonic() + 20
    while int(marker.get_attribute("data-cell")[1:]) < 6:
        assert time.monotonic() < deadline, "the held button did not keep stepping"
        # The server times the landings by its own clock: the page's never runs ahead of it
        # (each 50 ms of the page's after 50 ms of the server's), or a step would be sent
        # before its last had landed, and refused (run 300 ms after sleeping 250, it was).
        time.sleep(0.05)
        page.clock.run_for(50)
    south.evaluate(PRESS, "pointerup")
    page.clock.run_for(2_000)
    sent = page.evaluate("window.sent")
    wait_until(
        lambda: Move.objects.filter(game=game, seat=0).count() == len(sent),
        timeout=10,
        what="the steps sent to be taken",
    )
    assert sent == ["S"] * len(sent)
    steps = list(Move.objects.filter(game=game, seat=0).order_by("ply"))
    assert [m.outcome["at"] for m in steps] == [f"a{row}" for row in range(2, len(sent) + 2)]
    landings = [m.outcome["landed_ms"] for m in steps]
    assert all(b - a >= rules.STEP_MS for a, b in zip(landings, landings[1:], strict=False))
