"""A visitor downloads a finished game's record from its replay and has it checked on Check a
game record, as its file and as pasted text, changed; and the same with JavaScript off."""

from __future__ import annotations

import json

from playwright.sync_api import expect

from games.archive.records import SAME_AS_HELD
from tests.conftest import FIXED_SEED, play_to_the_end


def test_a_downloaded_record_is_checked_as_a_file_and_as_text(new_page, make_cornmaze, tmp_path):
    game = play_to_the_end(make_cornmaze(seats=3, size=6, seed=FIXED_SEED))
    page = new_page()
    page.goto(f"/games/{game.pk}/replay/")
    with page.expect_download() as download:
        page.locator("#download-record").click()
    path = tmp_path / "record.json"
    download.value.save_as(path)

    page.locator("#check-a-record").click()
    page.wait_for_url("**/records/verify/")
    # The file's label is one line, its code included (each of its parts was a line of its own).
    label = page.locator("label", has=page.locator("#record-file"))
    top, code = label.bounding_box(), label.locator("code").bounding_box()
    assert top is not None and code is not None and code["y"] - top["y"] < 8, (top, code)
    page.locator("#record-file").set_input_files(path)
    page.get_by_role("button", name="Check the record").click()
    verdict = page.locator("#verify .verified")
    expect(verdict).to_contain_text(f"✔ cornmaze game {game.pk} checks out")
    expect(verdict).to_contain_text(SAME_AS_HELD)

    # The same record, its result changed and pasted as text.
    record = json.loads(path.read_text())
    record["result"]["places"] = [1, 1, 1]
    page.locator("#record-text").fill(json.dumps(record, indent=2))
    page.get_by_role("button", name="Check the record").click()
    expect(verdict).to_contain_text("✘ The record does NOT check out")
    expect(verdict).to_contain_text("The result is not")


def test_checking_a_record_works_without_javascript(browser, live_server, make_cornmaze, tmp_path):
    game = play_to_the_end(make_cornmaze(seats=3, size=6, seed=FIXED_SEED))
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"/games/{game.pk}/replay/")
        record = page.request.get(page.locator("#download-record").get_attribute("href"))
        path = tmp_path / "record.json"
        path.write_bytes(record.body())

        page.goto("/")
        page.locator("footer").get_by_role("link", name="checked").click()
        page.wait_for_url("**/records/verify/")
        page.locator("#record-text").fill("[1, 2, 3]")
        page.get_by_role("button", name="Check the record").click()
        expect(page.locator("#verify-error")).to_have_text("A record is a JSON object.")
        # The text stays to be mended; sent with a file as well, it is one record too many.
        page.locator("#record-file").set_input_files(path)
        page.get_by_role("button", name="Check the record").click()
        expect(page.locator("#verify-error")).to_contain_text("not both")

        page.locator("#record-text").fill("")
        page.locator("#record-file").set_input_files(path)
        page.get_by_role("button", name="Check the record").click()
        expect(page.locator("#verify .verified.ok")).to_contain_text("checks out")
    finally:
        context.close()
