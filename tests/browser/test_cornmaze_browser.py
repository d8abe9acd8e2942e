"""Two guests play a Corn maze to the end in two browsers while a third watches; then the
game is downloaded and verified."""

from __future__ import annotations

import hashlib
import io
import json
from zoneinfo import ZoneInfo

import pytest
from django.core.management import call_command
from django.urls import reverse
from playwright.sync_api import Page, expect

from games.engines import cornmaze
from games.models import Game, Move
from games.play import core
from tests.browser.tour import client_for, signed_in
from tests.conftest import FIXED_SEED, a_legal_move, play_to_the_end, seat_user, to_move

MAX_TURNS = 60
# The game the two guests play: with the moves of `furthest_right`, it lasts GUESTS_MOVES.
GUESTS_SEED = hashlib.sha256(b"two guests").digest()
GUESTS_MOVES = 3


def letter(col: int) -> str:
    return chr(ord("a") + col)


def furthest_right(state: dict) -> list[int]:
    """The first move that takes the mover's marker furthest right. The first legal move can
    wander for hundreds of turns (3 games in 100 on a 6x6 board took over 60); this one ends a
    game in a few (at most 12 turns in 1,000 games against the simple bot)."""
    (seat,) = cornmaze.to_move(state)
    ends = [
        (cornmaze.apply(state, seat, {"shifts": shifts})[1]["end"][1], shifts)
        for shifts in cornmaze.legal_moves(state)
    ]
    best = max(col for col, _ in ends)
    return next(shifts for col, shifts in ends if col == best)


def test_two_guests_play_to_the_end_while_a_spectator_watches(new_page, tmp_path):
    alice, bob, watcher = new_page(), new_page(), new_page()

    alice.goto("/new/cornmaze/")
    alice.fill("input[name=size]", "6")
    alice.click("text=Create the game")
    alice.wait_for_url("**/games/*/")
    game = Game.objects.get()
    url = f"/games/{game.pk}/"
    assert alice.locator("#status").inner_text().startswith("Waiting for players")
    # A known game: it starts when Bob joins, from this seed.
    Game.objects.filter(pk=game.pk).update(
        seed=GUESTS_SEED, seed_sha256=hashlib.sha256(GUESTS_SEED).hexdigest()
    )

    bob.goto("/")
    bob.locator("#open-games").get_by_role("button", name="Join").click()
    bob.wait_for_url(f"**{url}")
    watcher.goto(url)
    # Alice's page learns by itself that the game has started.
    alice.locator("#board").wait_for()

    pages = {0: alice, 1: bob}
    for turn in range(MAX_TURNS):
        game.refresh_from_db()
        if game.status != Game.Status.ACTIVE:
            break
        (seat,) = cornmaze.to_move(game.state)
        first, second = furthest_right(game.state)
        page = pages[seat]
        form = page.locator("#move-form")
        form.wait_for()  # arrives by polling when the other player has just moved
        assert "Your turn" in page.locator("#status").inner_text()
        form.locator(f"input[name=first][value={letter(first)}]").check()
        form.locator(f"input[name=second][value={letter(second)}]").check()
        form.get_by_role("button", name="Play").click()
        # The move swaps the board and log in place: the log grows to this turn's number.
        page.locator(f"#log li[value='{turn + 1}']").wait_for()
        if turn == 0:
            # The spectator's page picks the move up by polling, without a reload.
            watcher.locator("#log li[value='1']").wait_for()
            assert watcher.locator("#move-form").count() == 0
    game.refresh_from_db()
    assert game.status == Game.Status.FINISHED and game.ply == GUESTS_MOVES

    for page in (alice, bob, watcher):
        page.locator("#seed").wait_for()
        assert "wins" in page.locator("#status").inner_text()
    assert watcher.locator("#seed").inner_text() == game.seed_hex

    with watcher.expect_download() as download:
        watcher.get_by_role("link", name="Download record.json").click()
    path = tmp_path / "record.json"
    download.value.save_as(path)
    record = json.loads(path.read_text())
    assert record["result"]["status"] == "finished"
    out = io.StringIO()
    call_command("verify", str(path), stdout=out)
    assert "checks out" in out.getvalue()


def test_a_guest_plays_a_bot_with_javascript_off(browser, live_server, transactional_db):
    """Plain form posts work: the bot's reply is played here through the service, as a worker
    would, so the page only needs a reload."""
    from games.play import core

    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    page = context.new_page()
    page.goto("/new/cornmaze/")
    page.select_option("select[name=seat_1]", "simple")
    page.click("text=Create the game")
    game = Game.objects.get()
    for _ in range(MAX_TURNS):
        game.refresh_from_db()
        if game.status != Game.Status.ACTIVE:
            break
        (seat,) = cornmaze.to_move(game.state)
        if seat == 1:
            core.bot_turn_play(game_id=game.pk, ply=game.ply)
            continue
        page.goto(f"/games/{game.pk}/")
        first, second = furthest_right(game.state)
        page.check(f"#move-form input[name=first][value={letter(first)}]")
        page.check(f"#move-form input[name=second][value={letter(second)}]")
        if game.ply < 2:
            # The preview, by a plain post: the page comes back with the choice kept.
            page.click("#preview")
            page.wait_for_load_state()
            caption = page.locator("#board-caption").inner_text()
            assert f"Preview of {letter(first)} then {letter(second)}" in caption
            assert page.is_checked(f"#move-form input[name=second][value={letter(second)}]")
        page.click("#play")
        page.wait_for_load_state()
    game.refresh_from_db()
    assert game.status == Game.Status.FINISHED
    page.goto(f"/games/{game.pk}/")
    assert "Game over" in page.locator("#status").inner_text()
    context.close()


def test_times_are_shown_in_the_viewers_own_time_zone_in_one_format(
    browser, live_server, transactional_db, make_cornmaze
):
    game = make_cornmaze()
    finished = play_to_the_end(make_cornmaze(size=6, seed=FIXED_SEED))
    (deadline,) = game.seats.exclude(deadline=None).values_list("deadline", flat=True)
    for zone in ("Pacific/Auckland", "America/Los_Angeles"):
        context = browser.new_context(base_url=live_server.url, timezone_id=zone)
        page = context.new_page()
        shown = {}
        for name, path, when in [
            ("deadline", f"/games/{game.pk}/", deadline),
            ("replay", f"/games/{finished.pk}/replay/", finished.finished_at),
            ("archive", "/archive/", finished.finished_at),
        ]:
            page.goto(path)
            time = page.locator("main time[data-local]").first
            time.wait_for()
            local = when.astimezone(ZoneInfo(zone))
            text = time.inner_text()
            # "Thu 3 Apr 2025, 15:31 GMT+13": the same everywhere, the UTC time in its title.
            assert text.startswith(f"{local:%a} {local.day} {local:%b %Y, %H:%M} "), (name, text)
            assert time.get_attribute("title").endswith(" UTC")
            shown[name] = text
        assert shown["replay"] == shown["archive"]
        page.goto(f"/games/{game.pk}/")
        assert "3 days for each move. A player who runs out of time loses." in page.inner_text(
            "#clock-rule"
        )
        context.close()


def with_c_blocked_after_c(game: Game) -> int:
    """Puts the other marker in column c, one row above the bottom: shifting c first takes it
    to the bottom row, so c may not be shifted second. Returns the seat to move."""
    seat = to_move(game)
    state = dict(game.state)
    markers = [list(m) for m in state["markers"]]
    markers[1 - seat] = [state["size"] - 2, 2]
    state["markers"] = markers
    Game.objects.filter(pk=game.pk).update(state=state)
    return seat


def test_a_refused_move_keeps_the_shifts_chosen(browser, live_server, make_cornmaze):
    """The page of a refusal shows its message and the form as the player left it: by htmx,
    Play with only a first shift; without JavaScript (whose form asks for both shifts), a
    second shift that the first one blocks, refused by the server."""
    game = make_cornmaze()
    seat = with_c_blocked_after_c(game)
    user = seat_user(game, seat)
    url = reverse("game", args=[game.pk])

    with signed_in(browser, live_server.url, client_for(user)) as context:
        page = context.new_page()
        page.goto(url)
        page.check("#move-form input[name=first][value=d]")
        page.click("#play")
        expect(page.locator("#error")).to_have_text("Choose a column for the second shift.")
        expect(page.locator("#move-form input[name=first][value=d]")).to_be_checked()
        expect(page.locator("#move-form input:checked")).to_have_count(1)

    options = {"java_script_enabled": False}
    with signed_in(browser, live_server.url, client_for(user), **options) as context:
        page = context.new_page()
        page.goto(url)
        page.check("#move-form input[name=first][value=c]")
        page.check("#move-form input[name=second][value=c]")
        page.click("#play")
        assert page.url.endswith(reverse("game_move", args=[game.pk]))
        expect(page.locator("#error")).to_contain_text("Column c cannot be shifted second")
        expect(page.locator("#move-form input[name=first][value=c]")).to_be_checked()
        # The second shift it blocks is greyed now, and no longer chosen.
        second = page.locator("#move-form input[name=second][value=c]")
        expect(second).to_be_disabled()
        expect(second).not_to_be_checked()
    assert not Move.objects.filter(game=game).exists()


def test_a_lone_first_shift_is_kept_as_a_draft(browser, live_server, make_cornmaze):
    """With JavaScript, choosing the first shift alone saves the draft (the form's required
    second shift does not hold it back), so a reload before Play keeps it; Play with it alone
    is still refused."""
    game = make_cornmaze()
    user = seat_user(game, to_move(game))
    first = letter(a_legal_move(game)[0])
    draft_path = reverse("game_draft", args=[game.pk])

    with signed_in(browser, live_server.url, client_for(user)) as context:
        page = context.new_page()
        page.goto(reverse("game", args=[game.pk]))
        with page.expect_response(
            lambda r: r.url.endswith(draft_path) and r.request.method == "POST", timeout=5000
        ) as answer:
            page.check(f"#move-form input[name=first][value={first}]")
        assert answer.value.ok
        page.reload()
        expect(page.locator(f"#move-form input[name=first][value={first}]")).to_be_checked()
        expect(page.locator("#move-form input:checked")).to_have_count(1)
        page.click("#play")
        expect(page.locator("#error")).to_have_text("Choose a column for the second shift.")
    assert not Move.objects.filter(game=game).exists()


SECOND_BLOCKED = (
    "Greyed columns cannot be shifted second: after the first shift, a marker stands in their"
    " bottom row."
)


def test_a_second_shift_greyed_by_the_first_says_why(browser, live_server, make_cornmaze):
    """The second shift's columns that the first one blocks are greyed with a sentence that
    says why, shown and read as their description: as the first shift changes (JavaScript),
    and on the page of a preview without JavaScript."""
    game = make_cornmaze()
    user = seat_user(game, with_c_blocked_after_c(game))
    url = reverse("game", args=[game.pk])

    with signed_in(browser, live_server.url, client_for(user)) as context:
        page = context.new_page()
        page.goto(url)
        why = page.locator("#second-blocked")
        second = page.locator("#move-form input[name=second][value=c]")
        expect(why).to_be_hidden()
        page.check("#move-form input[name=first][value=c]")
        expect(second).to_be_disabled()
        expect(why).to_be_visible()
        expect(why).to_have_text(SECOND_BLOCKED)
        expect(second).to_have_accessible_description(SECOND_BLOCKED)
        # Another first shift blocks nothing: the sentence goes, and so does the description.
        page.check("#move-form input[name=first][value=d]")
        expect(second).to_be_enabled()
        expect(why).to_be_hidden()
        expect(second).to_have_accessible_description("")

    options = {"java_script_enabled": False}
    with signed_in(browser, live_server.url, client_for(user), **options) as context:
        page = context.new_page()
        page.goto(url)
        page.check("#move-form input[name=first][value=c]")
        page.click("#preview")
        second = page.locator("#move-form input[name=second][value=c]")
        expect(second).to_be_disabled()
        expect(page.locator("#second-blocked")).to_have_text(SECOND_BLOCKED)
        expect(page.locator("#second-blocked")).to_be_visible()
        expect(second).to_have_accessible_description(SECOND_BLOCKED)


def test_a_first_shift_greyed_by_a_marker_says_why(browser, live_server, make_cornmaze):
    """A column with a marker in its bottom row may not be shifted: greyed, and described by
    the form's sentence that says why."""
    game = make_cornmaze()
    seat = to_move(game)
    state = dict(game.state)
    markers = [list(m) for m in state["markers"]]
    markers[1 - seat] = [state["size"] - 1, 2]  # the bottom row of column c
    state["markers"] = markers
    Game.objects.filter(pk=game.pk).update(state=state)
    why = "Greyed columns cannot be shifted: a marker stands in their bottom row."
    with signed_in(browser, live_server.url, client_for(seat_user(game, seat))) as context:
        page = context.new_page()
        page.goto(reverse("game", args=[game.pk]))
        first = page.locator("#move-form input[name=first][value=c]")
        expect(first).to_be_disabled()
        expect(first).to_have_accessible_description(why)
        expect(
            page.locator("#move-form input[name=first][value=d]")
        ).to_have_accessible_description("")


def reading_order(page: Page, selector: str) -> list[str]:
    """These list items (number and text) in the order a reader meets them on the screen:
    row by row from the top, each row from the left."""
    boxes = [
        (round(box["y"]), box["x"], f"{item.get_attribute('value')}.{item.inner_text()}")
        for item in page.locator(selector).all()
        for box in [item.bounding_box()]
        if box is not None
    ]
    return [line for _, _, line in sorted(boxes)]


def test_the_move_log_reads_in_order_with_clock_events_among_the_moves(
    browser, live_server, make_cornmaze
):
    """The log reads row by row, as written: a gift of time among the moves spans the row
    after the move it followed, and the moves go on after it (they were laid out in columns,
    read down each, in blocks above and below each gift)."""
    game = make_cornmaze(size=12)
    for ply in range(7):
        if ply == 4:
            seat = to_move(game)
            core.time_give(game_id=game.pk, user=seat_user(game, 1 - seat), seat_index=seat)
        core.move_submit(
            game_id=game.pk,
            user=seat_user(game, to_move(game)),
            number=ply,
            move={"shifts": a_legal_move(game)},
        )
    with signed_in(browser, live_server.url, client_for(seat_user(game, 0))) as context:
        page = context.new_page()
        page.goto(reverse("game", args=[game.pk]))
        lines = page.locator("#log li")
        expect(lines).to_have_count(8)
        written = [f"{line.get_attribute('value')}.{line.inner_text()}" for line in lines.all()]
        assert written[4].startswith("4.") and "one more day" in written[4]
        page.locator("#log").screenshot(path="/tmp/h2_log_with_clock_events.png")
        assert reading_order(page, "#log li") == written


@pytest.mark.parametrize(
    "viewport",
    [{"width": 1280, "height": 900}, {"width": 375, "height": 667}],
    ids=["desktop", "phone"],
)
def test_the_board_stays_in_place_when_the_turn_comes_and_abort_goes(
    browser, live_server, make_cornmaze, viewport
):
    """The Abort button (until somebody but the creator moves) stood above the board: the other
    player's first move, picked up by polling, took it away and the board jumped up 38 px. It
    stands with Resign, beside the board. And the seats' line lost the "give one more day"
    button when the turn came, and the board went up 15 px more: the line keeps its height. On
    a phone the button has a line of its own (45 px): the seat to move keeps its room."""
    game = make_cornmaze()
    creator = game.seats.get(user=game.created_by).index

    def play(seat: int) -> None:
        move = {"shifts": a_legal_move(game)}
        core.move_submit(game_id=game.pk, user=seat_user(game, seat), number=game.ply, move=move)

    if to_move(game) == creator:
        play(creator)
    with signed_in(
        browser, live_server.url, client_for(game.created_by), viewport=viewport
    ) as context:
        page = context.new_page()
        page.goto(reverse("game", args=[game.pk]))
        expect(page.locator("#abort")).to_have_count(1)
        before = page.locator("#board").bounding_box()
        play(1 - creator)
        # The page learns of the move by polling: the move form comes, the Abort button goes.
        expect(page.locator("#move-form")).to_have_count(1, timeout=20_000)
        expect(page.locator("#abort")).to_have_count(0)
        after = page.locator("#board").bounding_box()
    assert before is not None and after is not None
    assert after["y"] == before["y"], (before, after)
