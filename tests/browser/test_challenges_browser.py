"""Playing with people one knows, in separate browsers (issue 15, parts 1 and 2): Alice
challenges Bob from his player page, Bob accepts in his lobby, they play a move, the game ends
and Alice offers a rematch that Bob, on the finished game's page, sees come and accepts; a guest
joins Alice's private game through its invite link and aborts it before anyone else moved; Alice
withdraws an open game. Each abort and withdraw is asked first: in a dialog, and without
JavaScript on a page that asks. Bob declines two challenges, each once asked (the lobby's
Decline on a page that asks, the game page's in a dialog), and Alice's mails about them
arrive."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlparse

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Dialog, Page, Request, expect

from games.models import Game
from games.play import challenges, core
from tests.conftest import a_legal_move, to_move
from tests.worker_fixtures import Inbox, WorkerProcess, make_player, text_and_html, wait_until


def sign_in(page: Page, username: str) -> None:
    page.goto("/accounts/login/")
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill("a-long-passphrase")  # make_player's
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("header .whoami")).to_have_text(username)


def letter(col: int) -> str:
    return chr(ord("a") + col)


def new_game(page: Page, **fields: str) -> Game:
    """Alice's new Corn maze from the form as it stands (a 6x6 board), and the game made."""
    before = set(Game.objects.values_list("pk", flat=True))
    page.fill("input[name=size]", "6")
    for name, value in fields.items():
        page.fill(f"input[name={name}]", value)
    page.get_by_role("button", name="Create the game").click()
    page.wait_for_url("**/games/*/")
    (game,) = Game.objects.exclude(pk__in=before)
    return game


def test_challenge_accept_play_rematch_invite_abort_and_withdraw(new_page, settings):
    settings.REMATCH_POLL_EVERY = "1s"  # how often Bob's finished game asks for an offer
    make_player("alice")
    make_player("bob")
    alice, bob, friend = new_page(), new_page(), new_page()
    sign_in(alice, "alice")
    sign_in(bob, "bob")

    # Alice challenges Bob from his player page: the form comes with his name filled in.
    alice.goto("/players/bob/")
    alice.locator("#challenge-player").get_by_role("link", name="Corn maze").click()
    expect(alice.locator("input[name=challenge]")).to_have_value("bob")
    game = new_game(alice)
    expect(alice.locator("#challenge-state")).to_contain_text("Waiting for bob to accept")
    assert game.seats.get(index=1).reserved_for is not None

    # Bob sees it in his lobby and accepts; the game starts for both.
    bob.goto("/")
    row = bob.locator("#challenges .challenge-row")
    expect(row).to_contain_text("from alice")
    row.get_by_role("button", name="Accept").click()
    bob.wait_for_url(f"**/games/{game.pk}/")
    bob.locator("#board").wait_for()
    game.refresh_from_db()
    assert game.status == Game.Status.ACTIVE

    # The player to move plays a move.
    mover = alice if to_move(game) == 0 else bob
    mover.goto(f"/games/{game.pk}/")
    first, second = a_legal_move(game)
    form = mover.locator("#move-form")
    form.locator(f"input[name=first][value={letter(first)}]").check()
    form.locator(f"input[name=second][value={letter(second)}]").check()
    form.get_by_role("button", name="Play").click()
    mover.locator("#log li[value='1']").wait_for()
    # Bob resigns (the page asks first): the game is over.
    bob.goto(f"/games/{game.pk}/")
    bob.once("dialog", lambda dialog: dialog.accept())
    bob.get_by_role("button", name="Resign").click()
    expect(bob.locator("#status")).to_contain_text("Game over")

    # The finished game: Alice offers a rematch; Bob, still on its page, sees the offer come
    # without a reload, and accepts.
    expect(bob.locator("#rematch-offer")).to_have_count(0)
    # Bob's page has asked at least once and was told there is nothing yet (and goes on).
    with bob.expect_response(lambda r: "rematch_until=" in r.url and r.status == 204):
        pass
    alice.goto(f"/games/{game.pk}/")
    alice.get_by_role("button", name="Rematch").click()
    rematch = Game.objects.get(rematch_of=game)
    alice.wait_for_url(f"**/games/{rematch.pk}/")
    expect(alice.locator("#rematch-of")).to_contain_text(f"game #{game.pk}")
    expect(alice.locator("#challenge-state")).to_contain_text("Waiting for bob")
    offer = bob.locator("#rematch-offer")
    expect(offer).to_contain_text("alice offered a rematch")
    offer.get_by_role("button", name="Accept the rematch").click()
    bob.wait_for_url(f"**/games/{rematch.pk}/")
    bob.locator("#board").wait_for()
    rematch.refresh_from_db()
    assert rematch.status == Game.Status.ACTIVE
    # Seats turned: Bob first now.
    assert [s.user.get_username() for s in rematch.seats.order_by("index")] == ["bob", "alice"]
    bob.goto(f"/games/{game.pk}/")
    expect(bob.locator("#rematch-link")).to_have_text(f"game #{rematch.pk}")

    # A private game: the invite link, shown to Alice only, brings a friend in as a guest.
    alice.goto("/new/cornmaze/")
    alice.get_by_label("Private game with an invite link").check()
    private = new_game(alice)
    link = alice.locator("#invite-link").input_value()
    assert private.invite_token in link
    bob.goto(f"/games/{private.pk}/")
    expect(bob.locator("#invite-link")).to_have_count(0)
    expect(bob.locator("#join")).to_have_count(0)
    bob.goto("/")
    expect(bob.locator("#open-games")).not_to_contain_text(f"#{private.pk}")
    friend.goto(urlparse(link).path)  # the link names SITE_URL; the test's server is elsewhere
    friend.get_by_role("button", name="Join this game").click()
    friend.wait_for_url(f"**/games/{private.pk}/")
    friend.locator("#board").wait_for()
    expect(friend.locator("header .whoami")).to_contain_text("Guest ")
    private.refresh_from_db()
    assert private.status == Game.Status.ACTIVE and private.ply == 0
    assert private.invite_token not in friend.content()

    # Nobody has moved: the guest aborts it (the page asks first), and nobody has a result.
    friend.once("dialog", lambda dialog: dialog.accept())
    friend.get_by_role("button", name="Abort: nobody else has moved yet").click()
    expect(friend.locator("#status")).to_contain_text("Aborted by a player")
    private.refresh_from_db()
    assert (private.status, private.result_reason) == (Game.Status.ABORTED, "player_aborted")

    # An open game, withdrawn by Alice once the dialog asked: dismissed, nothing is sent.
    alice.goto("/new/cornmaze/")
    waiting = new_game(alice)
    posts: list[str] = []

    def record(request: Request) -> None:
        if request.method == "POST":
            posts.append(urlparse(request.url).path)

    alice.on("request", record)
    messages: list[str] = []

    def answer(accept: bool) -> Callable[[Dialog], None]:
        def said(dialog: Dialog) -> None:
            messages.append(dialog.message)
            if accept:
                dialog.accept()
            else:
                dialog.dismiss()

        return said

    alice.once("dialog", answer(False))
    alice.get_by_role("button", name="Withdraw this game").click()
    expect(alice.locator("#withdraw")).to_be_visible()
    waiting.refresh_from_db()
    assert waiting.status == Game.Status.OPEN
    alice.once("dialog", answer(True))
    alice.get_by_role("button", name="Withdraw this game").click()
    expect(alice.locator("#status")).to_contain_text("Withdrawn by its creator")
    expect(alice.locator("#withdraw")).to_have_count(0)
    assert messages == ["Withdraw this game? It will not start for anybody."] * 2
    assert posts == [f"/games/{waiting.pk}/withdraw"]  # the dismissed dialog sent nothing
    assert alice.url.endswith(f"/games/{waiting.pk}/")  # swapped in place by htmx
    waiting.refresh_from_db()
    assert (waiting.status, waiting.result_reason) == (Game.Status.ABORTED, "withdrawn")


def test_withdraw_and_abort_without_javascript_ask_on_a_page_first(
    browser, live_server, transactional_db
) -> None:
    alice, bob = make_player("alice"), make_player("bob")
    waiting = challenge(alice, "bob")
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    try:
        page = context.new_page()
        sign_in(page, "alice")
        # Withdraw: the form's post shows the page that asks; its way back changes nothing.
        page.goto(f"/games/{waiting.pk}/")
        page.get_by_role("button", name="Withdraw this game").click()
        expect(page.locator("h1")).to_have_text(f"Withdraw Corn maze #{waiting.pk}?")
        expect(page.locator("main")).to_contain_text("it will not start, and nobody has a result")
        page.get_by_role("link", name="Back to the game").click()
        expect(page.locator("#challenge-state")).to_contain_text("Waiting for bob to accept")
        waiting.refresh_from_db()
        assert waiting.status == Game.Status.OPEN
        page.get_by_role("button", name="Withdraw this game").click()
        page.locator("#withdraw-confirm").get_by_role("button", name="Withdraw").click()
        page.wait_for_url(f"**/games/{waiting.pk}/")
        expect(page.locator("#status")).to_contain_text("Withdrawn by its creator")
        waiting.refresh_from_db()
        assert (waiting.status, waiting.result_reason) == (Game.Status.ABORTED, "withdrawn")

        # Abort: a game nobody has moved in yet, the same way.
        running = challenge(alice, "bob")
        challenges.challenge_accept(game_id=running.pk, user=bob)
        page.goto(f"/games/{running.pk}/")
        page.get_by_role("button", name="Abort: nobody else has moved yet").click()
        expect(page.locator("h1")).to_have_text(f"Abort Corn maze #{running.pk}?")
        running.refresh_from_db()
        assert running.status == Game.Status.ACTIVE
        page.locator("#abort-confirm").get_by_role("button", name="Abort").click()
        page.wait_for_url(f"**/games/{running.pk}/")
        expect(page.locator("#status")).to_contain_text("Aborted by a player")
        running.refresh_from_db()
        assert (running.status, running.result_reason) == (Game.Status.ABORTED, "player_aborted")
    finally:
        context.close()


def challenge(creator: User, challenged: str) -> Game:
    return core.game_create(
        kind="cornmaze",
        creator=creator,
        options={"size": 6},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
        reserved=challenges.challenged_players(names=[challenged], creator=creator),
    )


@pytest.mark.worker
def test_bob_declines_once_asked_and_alices_mail_arrives(
    new_page, celery_worker_process: WorkerProcess, smtp_server: Inbox
) -> None:
    alice = make_player("alice")
    make_player("bob")
    bob = new_page()
    sign_in(bob, "bob")
    from_lobby = challenge(alice, "bob")

    # From the lobby: Decline shows a page that asks first; nothing is declined meanwhile.
    bob.goto("/")
    bob.locator("#challenges .challenge-row").get_by_role("button", name="Decline").click()
    expect(bob.locator("h1")).to_have_text("Decline alice's challenge?")
    expect(bob.locator("main")).to_contain_text("it will not start, and nobody has a result")
    from_lobby.refresh_from_db()
    assert from_lobby.status == Game.Status.OPEN
    bob.locator("#decline-confirm").get_by_role("button", name="Decline").click()
    bob.wait_for_url(f"**/games/{from_lobby.pk}/")
    expect(bob.locator("#status")).to_contain_text("a challenged player said no")
    from_lobby.refresh_from_db()
    assert (from_lobby.status, from_lobby.result_reason) == (Game.Status.ABORTED, "declined")

    def alices() -> list[str]:
        return [m["Subject"] for m in smtp_server.messages if m["To"] == "alice@example.com"]

    wait_until(
        lambda: len(alices()) == 1,
        timeout=60,
        what=f"alice's mail\n{celery_worker_process.output()[-3000:]}",
    )
    assert alices() == [f"bob declined your challenge: Corn maze #{from_lobby.pk}"]
    (message,) = [m for m in smtp_server.messages if m["To"] == "alice@example.com"]
    text, html = text_and_html(message)
    assert "6×6 board, 3 days per move, rated" in text and "/new/cornmaze/" in text
    assert "<strong>bob</strong> declined your challenge" in html

    # On the game page the dialog asks: dismissed, nothing happens; accepted, declined.
    on_page = challenge(alice, "bob")
    bob.goto(f"/games/{on_page.pk}/")
    posts: list[str] = []

    def record(request: Request) -> None:
        if request.method == "POST":
            posts.append(urlparse(request.url).path)

    bob.on("request", record)
    bob.once("dialog", lambda dialog: dialog.dismiss())
    bob.locator("#decline").click()
    expect(bob.locator("#challenge-answer")).to_be_visible()
    on_page.refresh_from_db()
    assert on_page.status == Game.Status.OPEN
    bob.once("dialog", lambda dialog: dialog.accept())
    bob.locator("#decline").click()
    expect(bob.locator("#status")).to_contain_text("a challenged player said no")
    expect(bob.locator("#challenge-answer")).to_have_count(0)
    assert posts == [f"/games/{on_page.pk}/decline"]  # the dismissed dialog sent nothing
    wait_until(
        lambda: len(alices()) == 2,
        timeout=60,
        what=f"alice's second mail\n{celery_worker_process.output()[-3000:]}",
    )
    assert alices()[1] == f"bob declined your challenge: Corn maze #{on_page.pk}"
    # Each once: a few sweeps later, still one mail a decline.
    celery_worker_process.wait_for_sweeps(2)
    assert len(alices()) == 2
