"""The chat, in three browsers: two players and a spectator of a Corn maze. The players talk and
see each other's messages arrive without a reload; the spectator writes in the spectators'
channel, which the players do not see until the game is over, and then do; a player mutes the
spectator, another reports a message, and the admin lists the report. Without JavaScript the
chat is a plain form."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.test import Client
from playwright.sync_api import Page, expect

from games.models import ChatMessage, ChatReport
from games.play import core
from tests.browser.test_accessibility_browser import AXE, RUN
from tests.worker_fixtures import make_game, make_player

pytestmark = pytest.mark.browser


def sign_in(page: Page, user: Any, base_url: str) -> Page:
    client = Client()
    client.force_login(user)
    cookie = client.cookies[django_settings.SESSION_COOKIE_NAME]
    page.context.add_cookies([{"name": cookie.key, "value": cookie.value, "url": base_url}])
    return page


def chat_violations(page: Page) -> list[str]:
    """What axe finds wrong in the chat (the rest of the page is the accessibility test's:
    here the game's part may be in the middle of a swap)."""
    return page.evaluate(RUN.replace("axe.run(document,", 'axe.run("#chat",'))


def send(page: Page, text: str) -> None:
    page.fill("#chat-text", text)
    page.click("#chat-send")
    expect(page.locator("#chat-text")).to_have_value("")


def test_players_and_a_spectator_chat_in_their_channels(new_page, live_server, settings):
    settings.CHAT_POLL_EVERY = "1s"
    ann, bob, eve = make_player("ann"), make_player("bob"), make_player("zed_watcher")
    game = make_game(ann, bob)
    url = f"/games/{game.pk}/"
    pages = {}
    for name, user in (("ann", ann), ("bob", bob), ("eve", eve)):
        pages[name] = sign_in(new_page(), user, live_server.url)
        pages[name].context.add_init_script(path=AXE)
        pages[name].goto(url)
    a, b, e = pages["ann"], pages["bob"], pages["eve"]
    expect(a.locator("#chat label[for=chat-text]")).to_have_text("Message to the players")
    expect(e.locator("#chat label[for=chat-text]")).to_have_text("Message to the spectators")

    # The players talk: each message reaches the other page by its poll, without a reload.
    send(a, "Good luck, Bob!")
    expect(a.locator("#chat-players")).to_contain_text("Good luck, Bob!")
    expect(b.locator("#chat-players")).to_contain_text("Good luck, Bob!")
    send(b, "<b>Thanks</b>, you too.")
    expect(a.locator("#chat-players .chat-text").last).to_have_text("<b>Thanks</b>, you too.")
    # The spectator reads the players and writes to the spectators.
    expect(e.locator("#chat-players")).to_contain_text("you too.")
    send(e, "Ann should shift column c")
    expect(e.locator("#chat-spectators")).to_contain_text("Ann should shift column c")
    # A later players' message has reached both players' pages: the spectator's is not there.
    send(a, "After the spectator")
    for page in (a, b):
        expect(page.locator("#chat-players")).to_contain_text("After the spectator")
        expect(page.locator("#chat")).not_to_contain_text("column c")
        expect(page.locator("#chat-spectators")).to_have_count(0)
    b.reload()
    expect(b.locator("#chat-players")).to_contain_text("After the spectator")
    expect(b.locator("#chat")).not_to_contain_text("column c")

    # The game ends: the players' chats show the spectators' channel by themselves.
    core.game_resign(game_id=game.pk, user=bob)
    for page in (a, b):
        expect(page.locator("#chat-spectators")).to_contain_text("Ann should shift column c")

    # Ann mutes the spectator: gone from her page, not from the others'.
    a.locator("#chat-spectators .chat-message").filter(has_text="column c").get_by_role(
        "button", name="Mute zed_watcher"
    ).click()
    expect(a.locator("#chat-notice")).to_contain_text("You will not see messages from zed_watcher")
    expect(a.locator("#chat")).not_to_contain_text("column c")
    expect(a.locator("#chat-muted")).to_contain_text("You muted zed_watcher.")
    expect(a.locator("#chat-spectators-empty")).to_have_text(
        "No messages to show: 1 from people you muted is hidden."
    )
    expect(b.locator("#chat-spectators")).to_contain_text("column c")
    assert chat_violations(a) == []  # the chat with a notice and someone muted

    # A message of nothing but spaces is refused with a sentence; nothing is sent.
    a.fill("#chat-text", "   ")
    a.click("#chat-send")
    expect(a.locator("#chat-error")).to_have_text("Write a message first.")
    assert chat_violations(a) == []

    # Bob reports the spectator's message (after the page asks him to confirm).
    b.once("dialog", lambda dialog: dialog.accept())
    b.locator("#chat-spectators .chat-message").filter(has_text="column c").get_by_role(
        "button", name="Report this message from zed_watcher"
    ).click()
    expect(b.locator("#chat-notice")).to_contain_text("the message is reported")
    (report,) = ChatReport.objects.all()
    assert report.reporter == bob and report.message.text == "Ann should shift column c"

    # The admin lists the reported message.
    staff = User.objects.create_superuser("staff", "staff@example.com", "a-long-passphrase")
    admin = sign_in(new_page(), staff, live_server.url)
    admin.goto("/admin/games/chatmessage/?reported=yes")
    expect(admin.locator("#result_list")).to_contain_text("Ann should shift column c")
    expect(admin.locator("#result_list")).not_to_contain_text("Good luck")
    assert list(
        ChatMessage.objects.filter(reports__isnull=False).values_list("text", flat=True)
    ) == ["Ann should shift column c"]


def test_the_chat_works_without_javascript(browser, live_server, transactional_db):
    ann, bob = make_player("ann"), make_player("bob")
    game = make_game(ann, bob)
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    try:
        page = sign_in(context.new_page(), ann, live_server.url)
        page.goto(f"/games/{game.pk}/")
        page.fill("#chat-text", "Sent by a plain form")
        page.click("#chat-send")
        page.wait_for_url(re.compile(rf"/games/{game.pk}/\?chat=\d+#chat$"))
        expect(page.locator("#chat-players")).to_contain_text("Sent by a plain form")
        assert ChatMessage.objects.count() == 1
    finally:
        context.close()
